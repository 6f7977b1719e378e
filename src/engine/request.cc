#include "engine/request.h"

#include <ATen/ATen.h>

#include <chrono>
#include <future>

#include "model/model.h"

namespace impress {
namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

// Serves the matched prefix's stored KV layer by layer, loading layer l+1 on
// another thread while layer l computes, and collects everything into `dense`.
class ReuseKv final : public KvProvider {
 public:
  ReuseKv(PrefixStore& store, std::vector<uint64_t> chunks, DenseKvCache& dense, int layers, bool prefetch)
      : store_(store), chunks_(std::move(chunks)), dense_(dense), loads_(layers), prefetch_(prefetch) {
    Start(0);
  }
  ~ReuseKv() override {
    for (auto& f : loads_)
      if (f.valid()) f.wait();
  }

  PrefixKv Prefix(const LayerQkv& qkv) override {
    const int l = qkv.layer;
    auto t0 = Clock::now();
    Start(l);
    Loaded got = loads_[l].get();
    io_ms_ += Ms(t0, Clock::now());
    if (prefetch_) Start(l + 1);
    if (!got.status.ok()) {
      if (status_.ok()) status_ = got.status;
    } else {
      LayerQkv loaded;
      loaded.layer = l;
      loaded.k = got.k;
      loaded.v = got.v;
      dense_.Append(loaded);
    }
    for (int i = 0; i < 3; ++i) stats_.bytes[i] += got.stats.bytes[i];
    for (int i = 0; i < 2; ++i) stats_.hits[i] += got.stats.hits[i];
    stats_.chunks += got.stats.chunks;
    stats_.disk_chunks += got.stats.disk_chunks;
    return dense_.Prefix(qkv);
  }
  void Append(const LayerQkv& qkv) override { dense_.Append(qkv); }

  const Status& status() const { return status_; }
  double io_ms() const { return io_ms_; }
  const LoadStats& stats() const { return stats_; }

 private:
  struct Loaded {
    Status status;
    at::Tensor k, v;
    LoadStats stats;
  };
  void Start(int l) {
    if (l >= static_cast<int>(loads_.size()) || loads_[l].valid()) return;
    loads_[l] = std::async(std::launch::async, [this, l] {
      c10::InferenceMode guard;
      Loaded r;
      r.status = store_.LoadLayer(chunks_, l, &r.k, &r.v, &r.stats);
      return r;
    });
  }

  PrefixStore& store_;
  std::vector<uint64_t> chunks_;
  DenseKvCache& dense_;
  std::vector<std::future<Loaded>> loads_;
  bool prefetch_;
  Status status_;
  double io_ms_ = 0;
  LoadStats stats_;
};

at::Tensor LastLogProbs(const at::Tensor& logits) { return at::log_softmax(logits[0], -1).cpu(); }

}  // namespace

StatusOr<System> ParseSystem(const std::string& name) {
  if (name == "recomp") return System::kRecomp;
  if (name == "as") return System::kAs;
  return Status::Error("--system: unknown system '" + name + "' (recomp, as)");
}

const char* SystemName(System s) { return s == System::kRecomp ? "recomp" : "as"; }

StatusOr<at::Tensor> RunRequest(System system, Model& model, PrefixStore* store, const std::vector<int32_t>& context,
                                int64_t storable, DenseKvCache& kv, RequestTrace* trace, const RequestOptions& opt) {
  RETURN_IF_ERROR(ValidateTokens(model.config(), context, 0));
  const auto start = Clock::now();
  kv.Truncate(0);
  at::Tensor last;
  if (system == System::kRecomp || store == nullptr) {
    last = LastLogProbs(model.Forward(context, 0, kv));
    trace->computed_tokens = static_cast<int64_t>(context.size());
    trace->ttft_ms = Ms(start, Clock::now());
    return last;
  }
  std::vector<int32_t> prefix(context.begin(), context.begin() + std::min<int64_t>(storable, context.size()));
  RadixTree::Match match = store->tree().MatchPrefix(prefix);
  // Keep at least one token to compute: its logits are the first token's.
  while (!match.chunks.empty() && match.tokens() >= static_cast<int64_t>(context.size())) match.chunks.pop_back();
  const int64_t m = match.tokens();
  store->tree().Lock(match);
  if (m == 0) {
    last = LastLogProbs(model.Forward(context, 0, kv));
  } else {
    ReuseKv reuse(*store, match.chunks, kv, model.config().num_layers, opt.prefetch);
    std::vector<int32_t> rest(context.begin() + m, context.end());
    at::Tensor logits = model.Forward(rest, m, reuse);
    if (!reuse.status().ok()) {  // never serve a corrupt chunk: recompute everything
      trace->recomputed_after_error = true;
      trace->error = reuse.status().message();
      kv.Truncate(0);
      logits = model.Forward(context, 0, kv);
    } else {
      trace->reused_tokens = m;
      trace->io_ms = reuse.io_ms();
      trace->load = reuse.stats();
    }
    last = LastLogProbs(logits);
  }
  store->tree().Unlock(match);
  trace->computed_tokens = static_cast<int64_t>(context.size()) - trace->reused_tokens;
  trace->ttft_ms = Ms(start, Clock::now());

  if (!trace->recomputed_after_error) {
    const auto t0 = Clock::now();
    ASSIGN_OR_RETURN(trace->stored_chunks, store->Insert(prefix, kv));
    trace->store_ms = Ms(t0, Clock::now());
  }
  return last;
}

}  // namespace impress
