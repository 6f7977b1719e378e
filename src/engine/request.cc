#include "engine/request.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <future>
#include <set>

#include "common/named.h"
#include "model/model.h"
#include "select/importance.h"

namespace impress {
namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double, std::milli>(b - a).count(); }

void AddStats(LoadStats* to, const LoadStats& from) {
  for (int i = 0; i < 3; ++i) to->bytes[i] += from.bytes[i];
  for (int i = 0; i < 2; ++i) to->hits[i] += from.hits[i];
  to->chunks += from.chunks;
  to->disk_chunks += from.disk_chunks;
}

// One read per layer, each startable early on its own thread: Start(l)
// begins layer l's read, Take(l) returns it (reading on the calling thread if
// it was never started). Destruction waits for reads still running, so an
// owner declares it after everything `read` uses.
template <class T>
class LayerReads {
 public:
  LayerReads(int layers, std::function<T(int)> read) : reads_(layers), read_(std::move(read)) {}
  ~LayerReads() {
    for (auto& f : reads_)
      if (f.valid()) f.wait();
  }
  void Start(int l) {
    if (l >= static_cast<int>(reads_.size()) || reads_[l].valid()) return;
    reads_[l] = std::async(std::launch::async, [this, l] {
      c10::InferenceMode guard;
      return read_(l);
    });
  }
  T Take(int l) { return reads_[l].valid() ? reads_[l].get() : read_(l); }

 private:
  std::vector<std::future<T>> reads_;
  std::function<T(int)> read_;
};

// Serves the matched prefix's stored KV layer by layer, loading layer l+1 on
// another thread while layer l computes, and collects everything into `dense`.
class ReuseKv final : public KvProvider {
 public:
  ReuseKv(PrefixStore& store, const PrefixLease& lease, DenseKvCache& dense, int layers, bool prefetch)
      : store_(store), lease_(lease), dense_(dense), prefetch_(prefetch),
        loads_(layers, [this](int l) { return Load(l); }) {
    if (prefetch_) loads_.Start(0);
  }

  PrefixKv Prefix(const LayerQkv& qkv) override {
    const int l = qkv.layer;
    auto t0 = Clock::now();
    Loaded got = loads_.Take(l);
    io_ms_ += Ms(t0, Clock::now());
    if (prefetch_) loads_.Start(l + 1);
    if (!got.status.ok()) {
      if (status_.ok()) status_ = got.status;
    } else {
      LayerQkv loaded;
      loaded.layer = l;
      loaded.k = got.k;
      loaded.v = got.v;
      dense_.Append(loaded);
    }
    AddStats(&stats_, got.stats);
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
  Loaded Load(int l) {
    Loaded r;
    r.status = store_.LoadLayer(lease_.chunks, l, &r.k, &r.v, &r.stats);
    if (r.status.ok()) {
      r.k = store_.ToTokenOrder(lease_, l, r.k);
      r.v = store_.ToTokenOrder(lease_, l, r.v);
    }
    return r;
  }

  PrefixStore& store_;
  const PrefixLease& lease_;
  DenseKvCache& dense_;
  bool prefetch_;
  Status status_;
  double io_ms_ = 0;
  LoadStats stats_;
  LayerReads<Loaded> loads_;  // last: it waits for running loads before the rest goes
};

// Selective loading from the store for one layer (PAPER.md section 1): H2O
// reads every chunk's keys, picks each head's top-k and reads the values of
// the chunks holding a chosen token; IMPRESS reads the probe keys only, and
// when the probe heads agree reads keys and values of the chunks holding the
// agreed tokens (with ItfUnit::kChunk: the best chunks in stored order, and
// the best tokens of one more to make k), else takes the H2O path. Works in token order:
// what is read in the lease's stored order is put back in token order first,
// and chosen tokens are found in the stored order through the lease's slots.
// With prefetch, each layer's first read (keys or probe keys) is made while
// the layer before computes; with speculation (ITF) it also takes the K and V
// of the chunks where the last trusted layer's agreed tokens are likeliest.
class StoreSelector {
 public:
  StoreSelector(PrefixStore& store, const Model& model, const PrefixLease& lease, const SelectorOptions& opt,
                bool record_importance, const RequestOptions& ro, RequestTrace* trace)
      : store_(store), model_(model), lease_(lease), chunks_(lease.chunks), opt_(opt),
        record_(record_importance), prefetch_(ro.prefetch), trace_(trace),
        first_reads_(model.config().num_layers, [this](int l) { return ReadFirst(l); }) {
    const int64_t p = static_cast<int64_t>(chunks_.size()) * store_.geometry().chunk_tokens;
    whole_ = opt_.kind == SelectorKind::kFull || RetainedTokens(opt_.retention, p) >= p;
    first_parts_ = whole_ ? (kKeys | kValues) : opt_.kind == SelectorKind::kItf ? kProbeKeys : kKeys;
    speculate_ = ro.speculate && prefetch_ && !whole_ && opt_.kind == SelectorKind::kItf;
    if (prefetch_) first_reads_.Start(0);
  }

  // Time in Select that is not spent fetching (importance, sets, gathers)
  // counts as selection; fetching, and waiting for a prefetch, as I/O.
  // Once layer l has its KV, layer l+1's first read starts, to overlap
  // layer l's attention and MLP rather than compete with its reads.
  SelectedPrefix operator()(const LayerQkv& qkv) {
    auto t0 = Clock::now();
    const double io_before = trace_->io_ms;
    SelectedPrefix s = Select(qkv);
    trace_->select_ms += Ms(t0, Clock::now()) - (trace_->io_ms - io_before);
    trace_->selection.Add(qkv.layer, s);
    if (prefetch_ && status_.ok()) first_reads_.Start(qkv.layer + 1);
    return s;
  }
  const Status& status() const { return status_; }

 private:
  // A layer's guess at the next one's chunks: its agreed tokens and how many
  // chunks they took in its own stored order.
  struct Guess {
    at::Tensor tokens;   // token positions, host
    int64_t chunks = 0;
  };
  // As many chunks as the guessing layer read, those holding most of its
  // tokens in layer l's stored order (ties: the earlier, which reordering
  // makes the more important), ascending. After reordering each layer has
  // its own order, and the guessing layer's less important tokens scatter
  // over the rest of layer l's chunks; in token order this takes nearly all
  // the chunks holding a guessed token, as layer l will.
  std::vector<int64_t> GuessedChunks(const Guess& g, int l) const {
    const int64_t c = store_.geometry().chunk_tokens;
    std::vector<int64_t> count(chunks_.size(), 0), order;
    at::Tensor slots = store_.SlotsOf(lease_, l, g.tokens);
    auto acc = slots.accessor<int64_t, 1>();
    for (int64_t i = 0; i < acc.size(0); ++i) count[acc[i] / c]++;
    for (size_t i = 0; i < count.size(); ++i)
      if (count[i] > 0) order.push_back(static_cast<int64_t>(i));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return count[a] > count[b]; });
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(g.chunks)));
    std::sort(order.begin(), order.end());
    return order;
  }
  // The part of a layer's read that its queries do not decide: every
  // chunk's keys (H2O), the probe keys (ITF), or keys and values (retention
  // 1). It can be read before the layer's queries exist. With speculation,
  // it takes the K and V of the chunks last_guess_ names instead of their
  // probe keys, in the same batch.
  struct FirstRead {
    Status status;
    std::vector<PrefixStore::Parts> parts;
    LoadStats stats;
    std::vector<int64_t> guessed;  // chunk indices whose K and V were read on the guess, ascending
  };
  FirstRead ReadFirst(int l) {
    FirstRead r;
    std::vector<uint8_t> want(chunks_.size(), first_parts_);
    if (speculate_ && last_guess_.tokens.defined()) {
      r.guessed = GuessedChunks(last_guess_, l);
      for (int64_t i : r.guessed) want[i] = kKeys | kValues;
    }
    r.status = store_.Fetch(chunks_, l, want, &r.parts, &r.stats);
    return r;
  }
  // Layer l's first read: the prefetched one, else read now.
  bool TakeFirstRead(int l, std::vector<PrefixStore::Parts>* parts) {
    auto t0 = Clock::now();
    FirstRead r = first_reads_.Take(l);
    trace_->io_ms += Ms(t0, Clock::now());
    AddStats(&trace_->load, r.stats);
    if (!r.status.ok()) {
      if (status_.ok()) status_ = r.status;
      return false;
    }
    *parts = std::move(r.parts);
    trace_->speculated_chunks += static_cast<int64_t>(r.guessed.size());
    guessed_ = std::move(r.guessed);
    return true;
  }

  SelectedPrefix Select(const LayerQkv& qkv) {
    const int l = qkv.layer;
    const int64_t c = store_.geometry().chunk_tokens, n = static_cast<int64_t>(chunks_.size()), p = n * c;
    const int64_t k = RetainedTokens(opt_.retention, p);
    std::vector<PrefixStore::Parts> parts;
    if (!TakeFirstRead(l, &parts)) return {};
    if (whole_) {
      store_.ObserveWhole(chunks_, l);
      return SelectFromPrefix({SelectorKind::kFull}, qkv, ToTokenOrder(l, Keys(parts)), ToTokenOrder(l, Values(parts)));
    }
    if (opt_.kind == SelectorKind::kItf) {
      const int64_t hq = qkv.q.size(0), hkv = qkv.k.size(0);
      const int64_t probe_kv = ProbeKvHeads(opt_.probe_heads, hq, hkv, opt_.probe_layout);
      std::vector<at::Tensor> pk;
      for (auto& x : parts) pk.push_back(x.probe.defined() ? x.probe : x.k.narrow(1, 0, probe_kv));
      at::Tensor probe_keys = ToTokenOrder(l, store_.StackChunks(pk).narrow(0, 0, probe_kv));
      at::Tensor imp = ProbeImportance(opt_, qkv, probe_keys);
      // The chunk unit ranks the chunks as stored (reordered ones included).
      ItfDecision d = opt_.unit == ItfUnit::kChunk
                          ? DecideItf(imp, k, opt_.alpha,
                                      store_.SlotsOf(lease_, l, at::arange(p, at::kLong)).div(c, "floor"), n)
                          : DecideItf(imp, k, opt_.alpha);
      if (d.trusted) {
        Record(l, imp, qkv.q.size(1));
        const at::Tensor agreed = d.agreed.cpu();
        last_guess_.tokens = agreed;
        at::Tensor slots = store_.SlotsOf(lease_, l, agreed);
        std::vector<int64_t> need = Chunks(slots, c);
        last_guess_.chunks = static_cast<int64_t>(need.size());
        if (!FetchSome(l, kKeys | kValues, need, &parts)) return {};
        CountImportant(l, slots, c, need, parts);
        at::Tensor local = Local(slots, need, c);
        SelectedPrefix s;
        s.kv = PrefixKv{Keys(parts, need).index_select(1, local), Values(parts, need).index_select(1, local), {}};
        s.total = p;
        s.kept = agreed.numel();
        s.probed = true;
        s.similarity = d.similarity;
        return s;
      }
      if (!Fetch(l, kKeys, &parts)) return {};
      SelectedPrefix f = H2O(qkv, l, k, &parts);
      f.probed = f.fallback = true;
      f.similarity = d.similarity;
      return f;
    }
    return H2O(qkv, l, k, &parts);
  }

  // REQUIRES: `parts` holds every chunk's keys.
  SelectedPrefix H2O(const LayerQkv& qkv, int l, int64_t k, std::vector<PrefixStore::Parts>* parts) {
    const int64_t c = store_.geometry().chunk_tokens;
    at::Tensor keys = ToTokenOrder(l, Keys(*parts));
    at::Tensor imp = PrefixImportance(qkv.q, keys, qkv.k, qkv.scale);
    Record(l, imp, qkv.q.size(1));
    at::Tensor sets = TopKSets(imp, k);
    at::Tensor chosen = store_.SlotsOf(lease_, l, std::get<0>(at::_unique(sets.flatten().cpu())));
    std::vector<int64_t> need = Chunks(chosen, c);
    if (!FetchSome(l, kValues, need, parts)) return {};
    CountImportant(l, chosen, c, need, *parts);
    // Values of chunks holding no chosen token stay zero: no head attends to them.
    std::vector<at::Tensor> vs;
    for (auto& x : *parts) vs.push_back(x.v.defined() ? x.v : at::zeros_like(x.k));
    at::Tensor keep = at::zeros({qkv.q.size(0), keys.size(1)}, at::TensorOptions().dtype(at::kBool).device(keys.device()));
    keep.scatter_(1, sets, true);
    SelectedPrefix s;
    s.kv = PrefixKv{keys, ToTokenOrder(l, store_.StackChunks(vs)), keep};
    s.total = keys.size(1);
    s.kept = k;
    return s;
  }

  at::Tensor ToTokenOrder(int l, const at::Tensor& stored) { return store_.ToTokenOrder(lease_, l, stored); }
  // Adds this request's importance [H, P] (column sums over `rows` query
  // rows) to the history reordering sorts by, as a mean attention weight.
  void Record(int l, const at::Tensor& imp, int64_t rows) {
    if (record_) store_.RecordImportance(lease_, l, imp.sum(0) / static_cast<double>(imp.size(0) * rows));
  }

  bool Fetch(int l, uint8_t what, std::vector<PrefixStore::Parts>* parts) {
    std::vector<int64_t> all(chunks_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
    return FetchSome(l, what, all, parts);
  }
  bool FetchSome(int l, uint8_t what, const std::vector<int64_t>& which, std::vector<PrefixStore::Parts>* parts) {
    parts->resize(chunks_.size());
    std::vector<uint64_t> ids;
    std::vector<PrefixStore::Parts> sub;
    for (int64_t i : which) {
      ids.push_back(chunks_[i]);
      sub.push_back((*parts)[i]);
    }
    auto t0 = Clock::now();
    Status s = store_.Fetch(ids, l, what, &sub, &trace_->load);
    trace_->io_ms += Ms(t0, Clock::now());
    if (!s.ok()) {
      if (status_.ok()) status_ = s;
      return false;
    }
    for (size_t j = 0; j < which.size(); ++j) (*parts)[which[j]] = sub[j];
    return true;
  }
  at::Tensor Keys(const std::vector<PrefixStore::Parts>& parts, const std::vector<int64_t>& which = {}) {
    std::vector<at::Tensor> ks;
    if (which.empty()) for (auto& x : parts) ks.push_back(x.k);
    else for (int64_t i : which) ks.push_back(parts[i].k);
    return store_.StackChunks(ks);
  }
  at::Tensor Values(const std::vector<PrefixStore::Parts>& parts, const std::vector<int64_t>& which = {}) {
    std::vector<at::Tensor> vs;
    if (which.empty()) for (auto& x : parts) vs.push_back(x.v);
    else for (int64_t i : which) vs.push_back(parts[i].v);
    return store_.StackChunks(vs);
  }
  // Chunk indices holding the given slots, ascending.
  static std::vector<int64_t> Chunks(const at::Tensor& tokens, int64_t c) {
    std::set<int64_t> s;
    auto acc = tokens.accessor<int64_t, 1>();
    for (int64_t i = 0; i < acc.size(0); ++i) s.insert(acc[i] / c);
    return std::vector<int64_t>(s.begin(), s.end());
  }
  // Positions of the slots `tokens` inside the concatenation of the chunks `need`.
  at::Tensor Local(const at::Tensor& tokens, const std::vector<int64_t>& need, int64_t c) {
    std::vector<int64_t> slot(need.back() + 1, -1);
    for (size_t j = 0; j < need.size(); ++j) slot[need[j]] = static_cast<int64_t>(j);
    auto acc = tokens.accessor<int64_t, 1>();
    std::vector<int64_t> out;
    for (int64_t i = 0; i < acc.size(0); ++i) out.push_back(slot[acc[i] / c] * c + acc[i] % c);
    return at::tensor(out, at::kLong).to(model_.device());
  }
  // Read amplification: the share of each read chunk's tokens that were
  // chosen; the score policy learns every chunk's share (0 for those read
  // only to be probed).
  void CountImportant(int l, const at::Tensor& tokens, int64_t c, const std::vector<int64_t>& need,
                      const std::vector<PrefixStore::Parts>& parts) {
    trace_->important_share_sum += static_cast<double>(tokens.numel()) / c;
    for (int64_t i : need) trace_->kv_chunk_tier[static_cast<int>(parts[i].tier)]++;
    for (int64_t i : guessed_) trace_->speculated_used += std::binary_search(need.begin(), need.end(), i);
    if (trace_->layer_kv_chunks.size() <= static_cast<size_t>(l)) trace_->layer_kv_chunks.resize(l + 1, 0);
    trace_->layer_kv_chunks[l] += static_cast<int64_t>(need.size());
    trace_->prefix_chunks = static_cast<int64_t>(chunks_.size());
    if (!store_.cache().scored()) return;
    std::vector<int64_t> count(chunks_.size(), 0);
    auto acc = tokens.accessor<int64_t, 1>();
    for (int64_t i = 0; i < acc.size(0); ++i) count[acc[i] / c]++;
    std::vector<std::pair<uint64_t, double>> shares;
    for (size_t i = 0; i < chunks_.size(); ++i)
      shares.push_back({PrefixStore::CacheKey(chunks_[i], l), static_cast<double>(count[i]) / c});
    store_.cache().Observe(shares);
  }

  PrefixStore& store_;
  const Model& model_;
  const PrefixLease& lease_;
  const std::vector<uint64_t>& chunks_;
  SelectorOptions opt_;
  bool record_;
  bool prefetch_;
  RequestTrace* trace_;
  Status status_;
  bool whole_;           // k covers the prefix: every layer loads in full
  uint8_t first_parts_;  // ChunkPart bits of every layer's first read
  bool speculate_;       // RequestOptions::speculate, where it applies
  // The last trusted layer's. Layer l+1's first read (on another thread)
  // runs between Start(l + 1), after layer l's Select, and layer l+1's
  // Select, which takes that read before it writes here.
  Guess last_guess_;
  std::vector<int64_t> guessed_;  // the current layer's chunks read on the guess
  LayerReads<FirstRead> first_reads_;  // last: it waits for running reads before the rest goes
};

at::Tensor LastLogProbs(const at::Tensor& logits) { return at::log_softmax(logits[0], -1).cpu(); }

}  // namespace

int64_t RequestTrace::kv_chunks() const {
  int64_t n = 0;
  for (int64_t c : layer_kv_chunks) n += c;
  return n;
}

namespace {

// The paper's systems and its ablation, each a composition.
struct SystemRecipe {
  const char* name;
  bool reuse;
  SelectorKind kind;
  const char* policy;
  bool reorder;
};
constexpr SystemRecipe kSystems[] = {
    {"recomp", false, SelectorKind::kFull, "lru", false},
    {"as", true, SelectorKind::kFull, "lru", false},
    {"h2o-lru", true, SelectorKind::kH2O, "lru", false},
    {"h2o-lfu", true, SelectorKind::kH2O, "lfu", false},
    {"impress-itf", true, SelectorKind::kItf, "lfu", false},
    {"impress-itf-ro", true, SelectorKind::kItf, "lfu", true},
    {"impress", true, SelectorKind::kItf, "score", true},
};

}  // namespace

const std::vector<std::string>& SystemNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const SystemRecipe& r : kSystems) v.push_back(r.name);
    return v;
  }();
  return names;
}

StatusOr<System> ParseSystem(const std::string& name, double retention, double alpha) {
  ASSIGN_OR_RETURN(const size_t i, ParseNamed<size_t>(SystemNames(), name, "--system", "system"));
  const SystemRecipe& r = kSystems[i];
  System s;
  s.name = name;
  s.reuse = r.reuse;
  s.select.kind = r.kind;
  s.select.retention = retention;
  s.select.alpha = alpha;
  s.policy = r.policy;
  s.reorder = r.reorder;
  return s;
}

StatusOr<at::Tensor> RunRequest(const System& system, Model& model, PrefixStore* store,
                                const std::vector<int32_t>& context, int64_t storable,
                                std::unique_ptr<RewindableKv>* kv_out, RequestTrace* trace, const RequestOptions& opt) {
  RETURN_IF_ERROR(ValidateTokens(model.config(), context, 0));
  const int layers = model.config().num_layers;
  const auto start = Clock::now();
  auto recompute = [&]() {
    auto dense = std::make_unique<DenseKvCache>(layers);
    at::Tensor last = LastLogProbs(model.Forward(context, 0, *dense));
    *kv_out = std::move(dense);
    return last;
  };
  if (system.reuse && store != nullptr && system.select.kind == SelectorKind::kItf) {
    const ModelConfig& c = model.config();
    const int64_t need =
        ProbeKvHeads(system.select.probe_heads, c.num_heads, c.num_kv_heads, system.select.probe_layout);
    if (store->geometry().probe_kv_heads < need)
      return Status::Error(store->options().dir + ": the store copies the keys of " +
                           std::to_string(store->geometry().probe_kv_heads) + " KV heads for probing; " + system.name +
                           "'s probe layout needs " + std::to_string(need) + " (a store opened with that layout)");
  }
  if (!system.reuse || store == nullptr) {
    at::Tensor last = recompute();
    trace->computed_tokens = static_cast<int64_t>(context.size());
    trace->ttft_ms = Ms(start, Clock::now());
    return last;
  }
  std::vector<int32_t> prefix(context.begin(), context.begin() + std::min<int64_t>(storable, context.size()));
  // Keep at least one token to compute: its logits are the first token's.
  const PrefixLease lease = store->Acquire(prefix, static_cast<int64_t>(context.size()) - 1);
  const int64_t m = lease.tokens();
  std::vector<int32_t> rest(context.begin() + m, context.end());
  trace->selection = SelectionCounters(layers);
  at::Tensor last;
  Status load_error;
  const DenseKvCache* computed = nullptr;  // the new tokens' KV, from position kv_offset
  int64_t kv_offset = 0;
  if (m == 0) {
    last = recompute();
    computed = static_cast<DenseKvCache*>(kv_out->get());
  } else if (system.select.kind == SelectorKind::kFull) {
    auto dense = std::make_unique<DenseKvCache>(layers);
    ReuseKv reuse(*store, lease, *dense, layers, opt.prefetch);
    last = LastLogProbs(model.Forward(rest, m, reuse));
    load_error = reuse.status();
    trace->io_ms = reuse.io_ms();
    trace->load = reuse.stats();
    computed = dense.get();
    *kv_out = std::move(dense);
  } else {
    StoreSelector selector(*store, model, lease, system.select, system.reorder, opt, trace);
    auto selected = std::make_unique<SelectedContextKv>(layers, [&](const LayerQkv& q) { return selector(q); });
    last = LastLogProbs(model.Forward(rest, m, *selected));
    load_error = selector.status();
    computed = &selected->tail();
    kv_offset = m;
    *kv_out = std::move(selected);
  }
  store->Release(lease);
  if (!load_error.ok()) {  // never serve a corrupt chunk: recompute everything
    trace->recomputed_after_error = true;
    trace->error = load_error.message();
    trace->io_ms = 0;
    last = recompute();
    computed = static_cast<DenseKvCache*>(kv_out->get());
    kv_offset = 0;
  } else {
    trace->reused_tokens = m;
  }
  trace->computed_tokens = static_cast<int64_t>(context.size()) - trace->reused_tokens;
  trace->ttft_ms = Ms(start, Clock::now());

  const auto t0 = Clock::now();
  ASSIGN_OR_RETURN(trace->stored_chunks, store->Insert(prefix, *computed, kv_offset));
  trace->store_ms = Ms(t0, Clock::now());
  return last;
}

}  // namespace impress
