#include "request/request.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "common/clock.h"
#include "request/store_source.h"
#include "request/stored_kv.h"
#include "model/model.h"

namespace impress {
namespace {


// What a request's selections report: importance into reordering's history
// (systems that reorder), per-layer counters into the trace, and everything
// to the caller's observer.
class RequestObserver final : public SelectionObserver {
 public:
  RequestObserver(PrefixStore& store, const PrefixLease& lease, bool record, RequestTrace* trace,
                  SelectionObserver* also)
      : store_(store), lease_(lease), record_(record), trace_(trace), also_(also) {}
  // Starts a layer's selection at `now`: the time to its first step's end is that step's.
  void Mark(Clock::time_point now) {
    mark_ = now;
    accounted_ = Accounted();
  }
  // Time since the last mark, less the reads and gathers in it, is
  // importance when an importance step ends, deciding when a decision step
  // ends; a new mark follows.
  void Account(SelectStep step, Clock::time_point now) {
    (step == SelectStep::kImportance ? trace_->importance_ms : trace_->decision_ms) += Since(now);
    Mark(now);
  }
  void OnStepEnd(int l, SelectStep step) override {
    Account(step, Clock::now());
    if (also_ != nullptr) also_->OnStepEnd(l, step);
  }
  // Ends a layer's selection at `now`: the time since the last step's end
  // (top-k, the agreed set) is deciding.
  void End(Clock::time_point now) { trace_->decision_ms += Since(now); }
  void OnReadBack(int l) override {
    trace_->layer_host_syncs.at(l)++;
    if (also_ != nullptr) also_->OnReadBack(l);
  }
  // Adds the importance to the history as a mean attention weight per token.
  void OnImportance(int l, const at::Tensor& imp, int64_t rows) override {
    if (record_) store_.RecordImportance(lease_, l, imp.sum(0) / static_cast<double>(imp.size(0) * rows));
    if (also_ != nullptr) also_->OnImportance(l, imp, rows);
  }
  void OnSelected(int l, const SelectedPrefix& s) override {
    trace_->selection.Add(l, s);
    if (also_ != nullptr) also_->OnSelected(l, s);
  }

 private:
  PrefixStore& store_;
  const PrefixLease& lease_;
  bool record_;
  RequestTrace* trace_;
  // Time the trace counts elsewhere: reads, gathers, placement.
  double Accounted() const { return trace_->apart_from_selection_ms() + trace_->gather_ms; }
  // Time since the mark, less what the trace counts elsewhere.
  double Since(Clock::time_point now) const { return Ms(mark_, now) - (Accounted() - accounted_); }
  SelectionObserver* also_;
  Clock::time_point mark_;
  double accounted_ = 0;  // Accounted() at mark_
};

// A selection method over the store, layer by layer: takes the layer's
// read-ahead, runs the method, and once the layer has its KV starts the next
// layer's read-ahead, to overlap this layer's attention and MLP rather than
// compete with its reads. Time in the method not spent reading (importance,
// sets, gathers) counts as selection; reading, and waiting for a read-ahead,
// as I/O; the cache policy's placement on what was used is neither. The
// parts are timed by the observer (importance), the source (gathers,
// placement) and here (deciding: the source's preparation, the decision
// steps and what follows the last step). A failed read ends selection:
// the layer gets no prefix, and status() tells the caller, who recomputes.
class StoreSelector {
 public:
  StoreSelector(const System& system, const std::vector<int32_t>& context, PrefixStore& store, const Model& model,
                const PrefixLease& lease, const RequestOptions& ro, int64_t new_tokens, RequestTrace* trace)
      : method_(MakeSelectionMethod(ForRequest(system.select, context))), observer_(store, lease, system.reorder, trace, ro.observer),
        trace_(trace),
        source_(store, model, lease,
                method_->Ahead(static_cast<int64_t>(lease.chunks.size()) * store.geometry().chunk_tokens), ro,
                new_tokens, trace) {}

  SelectedPrefix operator()(const LayerQkv& qkv) {
    auto t0 = Clock::now();
    const double apart_before = trace_->apart_from_selection_ms();
    SelectedPrefix s;
    observer_.Mark(t0);  // the source's preparation (apart from its reads) is deciding's
    Status st = source_.Begin(qkv.layer);
    if (st.ok()) {
      observer_.Account(SelectStep::kDecision, Clock::now());
      StatusOr<SelectedPrefix> r = method_->Select(qkv, source_, &observer_);
      if (r.ok()) s = *std::move(r);
      else st = r.status();
    }
    if (!st.ok() && status_.ok()) status_ = st;
    const auto end = Clock::now();
    observer_.End(end);
    trace_->select_ms += Ms(t0, end) - (trace_->apart_from_selection_ms() - apart_before);
    observer_.OnSelected(qkv.layer, s);
    if (status_.ok()) source_.Start(qkv.layer + 1);
    return s;
  }
  const Status& status() const { return status_; }
  std::vector<DeviceLayerTimes> DeviceTimes() { return source_.DeviceTimes(); }

 private:
  std::unique_ptr<SelectionMethod> method_;
  RequestObserver observer_;
  RequestTrace* trace_;
  Status status_;
  StoreSource source_;  // last: it waits for running reads before the rest goes
};

at::Tensor LastLogProbs(const at::Tensor& logits) { return at::log_softmax(logits[0], -1).cpu(); }

// The store path: the lease's prefix from the store, the rest computed over
// it by `system`'s selection. Fills `last`, `kv_out` and the trace's load and
// selection counts; a failed read is returned (the caller heals and retries).
Status ServeFromStore(const System& system, Model& model, PrefixStore* store, const PrefixLease& lease,
                      const std::vector<int32_t>& context, std::unique_ptr<RewindableKv>* kv_out, RequestTrace* trace,
                      const RequestOptions& opt, at::Tensor* last) {
  const int layers = model.config().num_layers;
  const int64_t m = lease.tokens();
  std::vector<int32_t> rest(context.begin() + m, context.end());
  trace->selection = SelectionCounters(layers);
  trace->layer_host_syncs.assign(layers, 0);
  StoreSelector selector(system, context, *store, model, lease, opt, static_cast<int64_t>(rest.size()), trace);
  auto selected = std::make_unique<SelectedContextKv>(layers, [&](const LayerQkv& q) { return selector(q); });
  *last = LastLogProbs(model.Forward(rest, m, *selected));
  trace->device_layers = selector.DeviceTimes();
  *kv_out = std::move(selected);
  trace->reused_tokens = m;
  return selector.status();
}

// A store that copies fewer KV heads' keys for probing than `system`'s probe
// layout reads is refused.
Status CheckProbeLayout(const System& system, const Model& model, const PrefixStore* store) {
  if (!system.reuse || store == nullptr || !system.uses_probe_heads) return Status::OK();
  const ModelConfig& c = model.config();
  const int64_t need = ProbeKvHeads(system.select.probe_heads, c.num_heads, c.num_kv_heads, system.select.probe_layout);
  if (store->geometry().probe_kv_heads >= need) return Status::OK();
  return Status::InvalidArgument(store->options().dir + ": the store copies the keys of " +
                                 std::to_string(store->geometry().probe_kv_heads) + " KV heads for probing; " +
                                 system.name + "'s probe layout needs " + std::to_string(need) +
                                 " (a store opened with that layout)");
}

// A store that keeps no chunk digests is refused to a system that scores
// chunks from them.
Status CheckDigests(const System& system, const PrefixStore* store) {
  if (!system.reuse || store == nullptr || !system.reads_digests || store->geometry().digests) return Status::OK();
  return Status::InvalidArgument(store->options().dir + ": the store keeps no chunk digests; " + system.name +
                                 " scores chunks from them (a store opened for it keeps them)");
}

// The whole context computed at full precision, with nothing reused.
at::Tensor Recompute(Model& model, const std::vector<int32_t>& context, std::unique_ptr<RewindableKv>* kv_out) {
  auto dense = std::make_unique<DenseKvCache>(model.config().num_layers);
  at::Tensor last = LastLogProbs(model.Forward(context, 0, *dense));
  *kv_out = std::move(dense);
  return last;
}

// Nothing stored: the prefix's whole chunks (`whole`) as the store computes
// them, the rest over them at full precision; those chunks are stored after
// the first token.
StatusOr<at::Tensor> ComputeThenStore(Model& model, PrefixStore* store, const std::vector<int32_t>& whole,
                                      const std::vector<int32_t>& context, std::unique_ptr<RewindableKv>* kv_out,
                                      RequestTrace* trace, Clock::time_point start) {
  const int64_t n = static_cast<int64_t>(context.size()), c = store->geometry().chunk_tokens;
  std::unique_ptr<DenseKvCache> kv = ComputeStoredKv(model, whole, c);
  const int64_t from = std::min<int64_t>(kv->size(), n - 1);
  const bool whole_kept = from == kv->size();  // else the context ends in the prefix's last chunk
  kv->Truncate(from);
  at::Tensor last = LastLogProbs(model.Forward(std::vector<int32_t>(context.begin() + from, context.end()), from, *kv));
  trace->ttft_ms = Ms(start, Clock::now());
  trace->computed_tokens = n;
  const auto t0 = Clock::now();
  std::unique_ptr<DenseKvCache> again = whole_kept ? nullptr : ComputeStoredKv(model, whole, c);
  ASSIGN_OR_RETURN(trace->stored_chunks, store->Insert(whole, again ? *again : *kv));
  trace->store_ms = Ms(t0, Clock::now());
  *kv_out = std::move(kv);
  return last;
}

// Serves the request from `lease`. A damaged or missing chunk costs time,
// never an answer: the matched prefix is recomputed as the store computes it
// (ComputeStoredKv, once), what failed is written back (Heal), and the
// request is served again from the store, so it gets the answer a clean store
// gives. A layer's read stops at its layer, so damage in several layers takes
// several attempts; one that heals nothing (the write-back failed) ends them,
// and so does a disk that damages what was just written (more attempts than a
// read has steps), and the request recomputes its whole context (*recomputed).
// Any other failed read is the request's error.
StatusOr<at::Tensor> ServeHealing(const System& system, Model& model, PrefixStore* store,
                                  const std::vector<int32_t>& prefix, PrefixLease lease,
                                  const std::vector<int32_t>& context, std::unique_ptr<RewindableKv>* kv_out,
                                  RequestTrace* trace, const RequestOptions& opt, bool* recomputed) {
  const int layers = model.config().num_layers;
  const int64_t n = static_cast<int64_t>(context.size());
  std::unique_ptr<DenseKvCache> stored_kv;
  at::Tensor last;
  *recomputed = false;
  for (int attempt = 1;; ++attempt) {
    Status load_error = ServeFromStore(system, model, store, lease, context, kv_out, trace, opt, &last);
    store->Release(lease);
    if (load_error.ok()) return last;
    if (!load_error.IsCorruption() && !load_error.IsNotFound()) return load_error;
    // A failed attempt's counts are dropped; what it met is kept.
    const int64_t healed = trace->healed_chunks;
    const std::string first_error = trace->error.empty() ? load_error.message() : trace->error;
    *trace = RequestTrace();
    trace->recomputed_after_error = true;
    trace->error = first_error;
    trace->healed_chunks = healed;
    const std::vector<int32_t> matched(prefix.begin(), prefix.begin() + lease.tokens());
    if (!stored_kv || stored_kv->size() < static_cast<int64_t>(matched.size()))
      stored_kv = ComputeStoredKv(model, matched, store->geometry().chunk_tokens);
    StatusOr<HealStats> h = store->Heal(matched, *stored_kv);
    if (h.ok()) trace->healed_chunks += h->chunks_written;
    if (!h.ok() || h->chunks_written + h->copies_dropped == 0 || attempt > 2 * layers + 2) {
      trace->error += !h.ok() ? "; writing it back: " + h.status().message()
                              : attempt > 2 * layers + 2 ? "; damaged again after writing it back"
                                                         : "; nothing to write back";
      *recomputed = true;
      trace->computed_tokens = n;
      return Recompute(model, context, kv_out);
    }
    lease = store->Acquire(prefix, n - 1);
  }
}

}  // namespace

StatusOr<at::Tensor> RunRequest(const System& system, Model& model, PrefixStore* store,
                                const std::vector<int32_t>& context, int64_t storable,
                                std::unique_ptr<RewindableKv>* kv_out, RequestTrace* trace, const RequestOptions& opt) {
  RETURN_IF_ERROR(ValidateTokens(model.config(), context, 0));
  const auto start = Clock::now();
  const int64_t n = static_cast<int64_t>(context.size());
  RETURN_IF_ERROR(CheckProbeLayout(system, model, store));
  RETURN_IF_ERROR(CheckDigests(system, store));
  if (!system.reuse || store == nullptr) {
    at::Tensor last = Recompute(model, context, kv_out);
    trace->computed_tokens = n;
    trace->ttft_ms = Ms(start, Clock::now());
    return last;
  }
  const int64_t c = store->geometry().chunk_tokens;
  const std::vector<int32_t> prefix(context.begin(), context.begin() + std::min(storable, n));
  // The prefix's whole chunks: what the store holds of it (ComputeStoredKv's KV).
  const std::vector<int32_t> whole(prefix.begin(), prefix.begin() + static_cast<int64_t>(prefix.size()) / c * c);
  // Keep at least one token to compute: its logits are the first token's.
  PrefixLease lease = store->Acquire(prefix, n - 1);
  if (lease.tokens() == 0) {
    store->Release(lease);
    return ComputeThenStore(model, store, whole, context, kv_out, trace, start);
  }
  bool recomputed = false;
  ASSIGN_OR_RETURN(at::Tensor last,
                   ServeHealing(system, model, store, prefix, lease, context, kv_out, trace, opt, &recomputed));
  trace->ttft_ms = Ms(start, Clock::now());  // the logits are on the host; the timeline is not TTFT
  if (recomputed) return last;
  trace->computed_tokens = n - trace->reused_tokens;
  // Whole chunks of the prefix past the match (a prefix stored in part): stored
  // as the store computes them, after the first token.
  if (static_cast<int64_t>(whole.size()) > trace->reused_tokens) {
    const auto t0 = Clock::now();
    std::unique_ptr<DenseKvCache> kv = ComputeStoredKv(model, whole, c);
    ASSIGN_OR_RETURN(trace->stored_chunks, store->Insert(whole, *kv));
    trace->store_ms = Ms(t0, Clock::now());
  }
  return last;
}

}  // namespace impress
