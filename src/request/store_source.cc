#include "request/store_source.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <iterator>

#include "codec/key_digest.h"
#include "common/clock.h"
#include "common/device_copy.h"
#include "model/model.h"

namespace impress {
namespace {

uint8_t PartsOf(ReadAhead a) {
  switch (a) {
    case ReadAhead::kAll: return kKeys | kValues;
    case ReadAhead::kKeys: return kKeys;
    case ReadAhead::kProbeKeys: return kProbeKeys;
    case ReadAhead::kNone: return 0;
    case ReadAhead::kDigests: return 0;
  }
  return kKeys | kValues;
}

// Chunk indices holding the given slots (of `n` chunks of c), ascending.
std::vector<int64_t> ChunksOf(const at::Tensor& slots, int64_t c, size_t n) {
  std::vector<uint8_t> held(n, 0);
  auto acc = slots.accessor<int64_t, 1>();
  for (int64_t i = 0; i < acc.size(0); ++i) held.at(static_cast<size_t>(acc[i] / c)) = 1;
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i)
    if (held[i]) out.push_back(static_cast<int64_t>(i));
  return out;
}

// Positions of `slots` inside the concatenation of the chunks `need`.
at::Tensor LocalIndex(const at::Tensor& slots, const std::vector<int64_t>& need, int64_t c, at::Device device) {
  std::vector<int64_t> slot(need.back() + 1, -1);
  for (size_t j = 0; j < need.size(); ++j) slot[need[j]] = static_cast<int64_t>(j);
  auto acc = slots.accessor<int64_t, 1>();
  at::Tensor out = at::empty({acc.size(0)}, at::kLong);
  int64_t* x = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < acc.size(0); ++i) x[i] = slot[acc[i] / c] * c + acc[i] % c;
  return ToDevice(out, device);
}

// Whether Fetch would read anything of `what` for a chunk that has `x`.
bool Missing(const ChunkParts& x, uint8_t what) {
  return ((what & kKeys) && !x.k.defined()) || ((what & kValues) && !x.v.defined()) ||
         ((what & kProbeKeys) && !x.probe.defined() && !x.k.defined());
}

// Counts the time of a read call that is not I/O (assembling chunks into
// tensors, indexing, casting) as the trace's gather_ms.
class GatherTimer {
 public:
  explicit GatherTimer(RequestTrace* t) : trace_(t), t0_(Clock::now()), other0_(t->apart_from_selection_ms()) {}
  ~GatherTimer() {
    trace_->gather_ms += Ms(t0_, Clock::now()) - (trace_->apart_from_selection_ms() - other0_);
  }

 private:
  RequestTrace* trace_;
  Clock::time_point t0_;
  double other0_;
};

// Counts the time of a call into the cache policy as the trace's placement_ms.
class PlacementTimer {
 public:
  explicit PlacementTimer(RequestTrace* t) : trace_(t), t0_(Clock::now()) {}
  ~PlacementTimer() { trace_->placement_ms += Ms(t0_, Clock::now()); }

 private:
  RequestTrace* trace_;
  Clock::time_point t0_;
};

}  // namespace

StoreSource::StoreSource(PrefixStore& store, const Model& model, const PrefixLease& lease, ReadAhead ahead,
                         const RequestOptions& ro, int64_t new_tokens, RequestTrace* trace)
    : store_(store), model_(model), lease_(lease), chunks_(lease.chunks), trace_(trace), prefetch_(ro.prefetch),
      first_parts_(PartsOf(ahead)),
      // A guess applies where the read ahead takes no chunk's keys (probe keys, digests or nothing).
      speculate_(ro.prefetch && !(first_parts_ & kKeys) ? ro.speculate : Speculation::kOff),
      read_ahead_(std::max(1, ro.read_ahead)), digests_ahead_(ahead == ReadAhead::kDigests), key_room_(new_tokens),
      first_reads_(model.config().num_layers, [this](int l, DeviceSpans* spans) { return ReadFirst(l, spans); }, store.load_stream()) {
  // Each layer's token order, on the device once per lease (on the CPU the lease's own).
  if (lease.reordered()) {
    for (const at::Tensor& slots : lease.slot_of) token_order_.push_back(ToDevice(slots, model.device()));
    token_order_ready_ = store.load_stream().Mark();  // the copies up, for reads on the load stream
  }
  for (int l = 0; l < model.config().num_layers; ++l) demand_spans_.emplace_back(&store.load_stream());
  guess_of_.resize(model.config().num_layers);
  if (prefetch_) StartRead(0);
}

void StoreSource::Start(int l) {
  // A method that reads nothing ahead has nothing to start until it has a guess.
  const bool empty =
      first_parts_ == 0 && !digests_ahead_ && (speculate_ == Speculation::kOff || !last_guess_.tokens.defined());
  if (!prefetch_ || empty) return;
  for (int j = l; j < std::min(l + read_ahead_, static_cast<int>(guess_of_.size())); ++j) StartRead(j);
}

void StoreSource::StartRead(int l) {
  if (first_reads_.Started(l)) return;
  guess_of_[l] = last_guess_;
  first_reads_.Start(l);
}

// As many chunks as the guessing layer read, those holding most of its
// positions in layer l's stored order (ties: the earlier, which reordering
// makes the more important), ascending. After reordering each layer has its
// own order, and the guessing layer's less important tokens scatter over the
// rest of layer l's chunks; in token order this takes nearly all the chunks
// holding a guessed token, as layer l will. Speculation::kCached keeps of
// those only the ones a cache level holds; kAdaptive does so when they are
// at least half of the guess.
std::vector<int64_t> StoreSource::GuessedChunks(const Guess& g, int l) const {
  const int64_t c = store_.geometry().chunk_tokens;
  std::vector<int64_t> count(chunks_.size(), 0), order;
  at::Tensor slots = SlotsOf(lease_, l, g.tokens);
  auto acc = slots.accessor<int64_t, 1>();
  for (int64_t i = 0; i < acc.size(0); ++i) count[acc[i] / c]++;
  for (size_t i = 0; i < count.size(); ++i)
    if (count[i] > 0) order.push_back(static_cast<int64_t>(i));
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return count[a] > count[b]; });
  order.resize(std::min<size_t>(order.size(), static_cast<size_t>(g.chunks)));
  if (speculate_ == Speculation::kCached || speculate_ == Speculation::kAdaptive) {
    // A chunk evicted between this and the read is read from below: counted, rare.
    std::vector<int64_t> cached;
    std::copy_if(order.begin(), order.end(), std::back_inserter(cached),
                 [&](int64_t i) { return store_.Cached(chunks_[i], l); });
    if (speculate_ == Speculation::kCached || 2 * cached.size() >= order.size()) order = std::move(cached);
  }
  std::sort(order.begin(), order.end());
  return order;
}

// With speculation, the K and V of the chunks last_guess_ names instead of
// their probe keys, in the same batch.
StoreSource::FirstRead StoreSource::ReadFirst(int l, DeviceSpans* spans) {
  store_.load_stream().Wait(token_order_ready_);  // on the load stream: after the token order's copy up
  FirstRead r;
  if (digests_ahead_) {
    r.status = AssembleInt8(l, &r.digests, &r.digest_bytes, spans);
    if (!r.status.ok()) return r;
  }
  const Guess& g = guess_of_[l];
  const bool guess = speculate_ != Speculation::kOff && g.tokens.defined();
  if (first_parts_ == 0 && !guess) {  // the method reads no chunk part ahead: every chunk's parts start empty
    r.parts.resize(chunks_.size());
    return r;
  }
  std::vector<uint8_t> want(chunks_.size(), first_parts_);
  if (guess) {
    r.guessed = GuessedChunks(g, l);
    for (int64_t i : r.guessed) want[i] = kKeys | kValues;
  }
  // On CUDA what it reads is on the device when Fetch returns (copied on the
  // load stream when started early), so that the layer finds it there.
  r.status = store_.Fetch(chunks_, l, want, &r.parts, &r.stats, spans);
  // What every layer reads first is also stacked here, in token order, so
  // that the layer finds it ready: keys and values, keys, or the probe keys
  // (of a chunk read whole, its first probe heads' keys).
  if (r.status.ok() && !chunks_.empty() && first_parts_ != 0) {
    std::vector<at::Tensor> ks, vs;
    for (const ChunkParts& p : r.parts) {
      ks.push_back(first_parts_ == kProbeKeys && p.probe.defined() ? p.probe : p.k);
      if (first_parts_ & kValues) vs.push_back(p.v);
    }
    const int64_t heads = first_parts_ == kProbeKeys ? store_.geometry().probe_kv_heads : 0;
    if (spans != nullptr) spans->Open();
    // Keys read with their values go to attention whole; the others leave room (key_room).
    r.k = store_.StackChunks(ks, TokenOrder(l), heads, first_parts_ & kValues ? 0 : key_room_);
    if (!vs.empty()) r.v = store_.StackChunks(vs, TokenOrder(l));
    if (spans != nullptr) spans->Close();
  }
  return r;
}

Status StoreSource::Begin(int l) {
  GatherTimer timer(trace_);  // letting go of the last layer's tensors is the gathers' cost
  auto t0 = Clock::now();
  FirstRead r = first_reads_.Take(l);
  trace_->io_ms += Ms(t0, Clock::now());
  trace_->load += r.stats;
  layer_ = l;
  parts_.clear();
  guessed_.clear();
  all_k_ = all_v_ = at::Tensor();
  digests_ = Int8Keys{};
  if (!r.status.ok()) return r.status;
  parts_ = std::move(r.parts);
  all_k_ = std::move(r.k);
  all_v_ = std::move(r.v);
  trace_->speculated_chunks += static_cast<int64_t>(r.guessed.size());
  guessed_ = std::move(r.guessed);
  digests_ = std::move(r.digests);
  trace_->digest_bytes += r.digest_bytes;
  return Status::OK();
}

std::vector<int64_t> StoreSource::Every() const {
  std::vector<int64_t> all(chunks_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  return all;
}

Status StoreSource::FetchSome(uint8_t what, const std::vector<int64_t>& which) {
  if (std::none_of(which.begin(), which.end(), [&](int64_t i) { return Missing(parts_[i], what); }))
    return Status::OK();
  std::vector<uint64_t> ids;
  std::vector<ChunkParts> sub;
  for (int64_t i : which) {
    ids.push_back(chunks_[i]);
    sub.push_back(parts_[i]);
  }
  auto t0 = Clock::now();
  Status s =
      store_.Fetch(ids, layer_, std::vector<uint8_t>(ids.size(), what), &sub, &trace_->load, &demand_spans_[layer_]);
  trace_->io_ms += Ms(t0, Clock::now());
  RETURN_IF_ERROR(s);
  for (size_t j = 0; j < which.size(); ++j) parts_[which[j]] = std::move(sub[j]);
  return Status::OK();
}

at::Tensor StoreSource::Stack(const std::vector<int64_t>& which, at::Tensor ChunkParts::*part,
                              const at::Tensor& rows, int64_t room) {
  std::vector<at::Tensor> xs;
  for (int64_t i : which) xs.push_back(parts_[i].*part);
  return StackNow(xs, rows, 0, room);
}

at::Tensor StoreSource::StackNow(const std::vector<at::Tensor>& parts, const at::Tensor& rows, int64_t heads,
                                 int64_t room) {
  DeviceSpans& spans = demand_spans_[layer_];
  spans.Open();
  at::Tensor out = store_.StackChunks(parts, rows, heads, room);
  spans.Close();
  return out;
}

void StoreSource::ObserveWhole() {
  if (!store_.wants_observations()) return;
  PlacementTimer placing(trace_);
  store_.ObserveWhole(chunks_, layer_);
}

at::Tensor StoreSource::TokenOrder(int l) const { return lease_.reordered() ? token_order_[l] : at::Tensor(); }

at::Tensor StoreSource::ChunkOf(int layer) {
  GatherTimer timer(trace_);
  IMPRESS_CHECK(layer == layer_);
  const int64_t c = store_.geometry().chunk_tokens, p = tokens();
  at::Tensor of = at::empty({p}, at::kLong);
  int64_t* x = of.data_ptr<int64_t>();
  if (!lease_.reordered()) {
    for (int64_t i = 0; i < p; ++i) x[i] = i / c;
  } else {
    const at::Tensor slot = lease_.slot_of[layer].to(at::kLong).contiguous();
    IMPRESS_CHECK(slot.is_cpu() && slot.numel() >= p);
    const int64_t* y = slot.data_ptr<int64_t>();
    for (int64_t i = 0; i < p; ++i) x[i] = y[i] / c;
  }
  return of;
}

Status StoreSource::All(int layer, at::Tensor* k, at::Tensor* v) {
  GatherTimer timer(trace_);
  IMPRESS_CHECK(layer == layer_);
  if (all_k_.defined() && all_v_.defined()) {  // stacked by the read-ahead
    ObserveWhole();
    store_.load_stream().HandOver(all_k_);  // made on the load stream
    store_.load_stream().HandOver(all_v_);
    *k = all_k_;
    *v = all_v_;
    return Status::OK();
  }
  const std::vector<int64_t> all = Every();
  RETURN_IF_ERROR(FetchSome(kKeys | kValues, all));
  ObserveWhole();
  *k = Stack(all, &ChunkParts::k, TokenOrder(layer));
  *v = Stack(all, &ChunkParts::v, TokenOrder(layer));
  return Status::OK();
}

Status StoreSource::Keys(int layer, at::Tensor* k) {
  GatherTimer timer(trace_);
  IMPRESS_CHECK(layer == layer_);
  if (first_parts_ == kKeys && all_k_.defined()) {  // stacked by the read-ahead
    store_.load_stream().HandOver(all_k_);
    *k = all_k_;
    return Status::OK();
  }
  const std::vector<int64_t> all = Every();
  RETURN_IF_ERROR(FetchSome(kKeys, all));
  *k = Stack(all, &ChunkParts::k, TokenOrder(layer), key_room_);
  return Status::OK();
}

Status StoreSource::ProbeKeys(int layer, int64_t kv_heads, at::Tensor* k) {
  GatherTimer timer(trace_);
  IMPRESS_CHECK(layer == layer_);
  if (first_parts_ == kProbeKeys && all_k_.defined() && kv_heads <= all_k_.size(0)) {  // stacked by the read-ahead
    store_.load_stream().HandOver(all_k_);
    *k = all_k_.narrow(0, 0, kv_heads);
    return Status::OK();
  }
  RETURN_IF_ERROR(FetchSome(kProbeKeys, Every()));
  // A chunk read for probing has the store's probe copy, which may hold more
  // KV heads than asked; a cached or guessed one has all its keys.
  std::vector<at::Tensor> pk;
  for (auto& x : parts_) pk.push_back(x.probe.defined() ? x.probe : x.k);
  *k = StackNow(pk, TokenOrder(layer), kv_heads, key_room_);
  return Status::OK();
}

Status StoreSource::Values(int layer, const at::Tensor& used, at::Tensor* v) {
  GatherTimer timer(trace_);
  IMPRESS_CHECK(layer == layer_);
  const int64_t c = store_.geometry().chunk_tokens;
  const at::Tensor slots = SlotsOf(lease_, layer, used);
  const std::vector<int64_t> need = ChunksOf(slots, c, chunks_.size());
  RETURN_IF_ERROR(FetchSome(kValues, need));
  CountImportant(slots, need);
  // Values of chunks holding no used position stay zero (made on the device,
  // in the stored dtype): no head attends to them.
  at::Tensor zero;
  for (const ChunkParts& x : parts_)
    if (x.v.defined()) {
      zero = at::zeros(x.v.sizes(), at::TensorOptions().dtype(x.v.scalar_type()).device(model_.device()));
      break;
    }
  std::vector<at::Tensor> vs;
  for (const ChunkParts& x : parts_) vs.push_back(x.v.defined() ? x.v : zero);
  *v = StackNow(vs, TokenOrder(layer));
  return Status::OK();
}

Status StoreSource::Gather(int layer, const at::Tensor& positions, at::Tensor* k, at::Tensor* v) {
  GatherTimer timer(trace_);
  IMPRESS_CHECK(layer == layer_);
  const int64_t c = store_.geometry().chunk_tokens;
  last_guess_.tokens = positions;
  const at::Tensor slots = SlotsOf(lease_, layer, positions);
  const std::vector<int64_t> need = ChunksOf(slots, c, chunks_.size());
  last_guess_.chunks = static_cast<int64_t>(need.size());
  RETURN_IF_ERROR(FetchSome(kKeys | kValues, need));
  CountImportant(slots, need);
  const at::Tensor local = LocalIndex(slots, need, c, model_.device());
  *k = Stack(need, &ChunkParts::k, local);
  *v = Stack(need, &ChunkParts::v, local);
  return Status::OK();
}

// Read amplification: the share of each read chunk's tokens that were used;
// the score policy learns every chunk's share (0 for those read only to be
// probed).
void StoreSource::CountImportant(const at::Tensor& slots, const std::vector<int64_t>& need) {
  const int64_t c = store_.geometry().chunk_tokens;
  const int l = layer_;
  trace_->important_share_sum += static_cast<double>(slots.numel()) / c;
  for (int64_t i : need) trace_->kv_chunk_tier[static_cast<int>(parts_[i].tier)]++;
  for (int64_t i : guessed_) trace_->speculated_used += std::binary_search(need.begin(), need.end(), i);
  if (trace_->layer_kv_chunks.size() <= static_cast<size_t>(l)) trace_->layer_kv_chunks.resize(l + 1, 0);
  trace_->layer_kv_chunks[l] += static_cast<int64_t>(need.size());
  trace_->prefix_chunks = static_cast<int64_t>(chunks_.size());
  if (!store_.wants_observations()) return;
  std::vector<int64_t> count(chunks_.size(), 0);
  auto acc = slots.accessor<int64_t, 1>();
  for (int64_t i = 0; i < acc.size(0); ++i) count[acc[i] / c]++;
  std::vector<std::pair<uint64_t, double>> shares;
  for (size_t i = 0; i < chunks_.size(); ++i)
    shares.push_back({ChunkKey{chunks_[i], l}.packed(), static_cast<double>(count[i]) / c});
  PlacementTimer placing(trace_);
  store_.Observe(shares);
}

at::Tensor StoreSource::OnModelDevice(const at::Tensor& x, at::ScalarType type) {
  if (x.device() == model_.device() && x.scalar_type() == type) return x;
  DeviceSpans& spans = demand_spans_[layer_];
  spans.Open();
  at::Tensor out = x.to(model_.device(), type);
  spans.Close();
  return out;
}

}  // namespace impress
