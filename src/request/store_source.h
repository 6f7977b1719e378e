// The tiered store as a selection method's PrefixSource (select/method.h),
// for one request's lease: the harness that `run` wraps around a method.
//
// Around the method it adds what only a store needs:
//  - read-ahead: layer l's query-independent part (the method's ReadAhead:
//    keys, probe keys, or everything) is read on another thread while layer
//    l-1 computes (Start; with RequestOptions::read_ahead r, from layer
//    l-r's selection on), and taken when layer l begins (Begin); that part
//    is also stacked in token order and in the compute dtype there, so that
//    All, Keys or ProbeKeys find the layer's tensor ready;
//  - speculation (RequestOptions::speculate, methods that read probe keys or
//    nothing ahead): that read also takes the K and V of the chunks where the
//    last gathered set's positions are likeliest, a guess at this layer's set
//    (the set gathered last when the read started);
//  - accounting: time waiting for reads (trace io_ms), bytes and hits per
//    tier, the chunks whose K or V a selection read and their tiers, and the
//    score policy's per-chunk important shares (Observe, timed as placement).
// Works in token order: what is read in the lease's stored order is put back
// in token order, and chosen positions are found in the stored order through
// the lease's slots. Reads of layer l are valid between Begin(l) and
// Begin(l + 1), on the thread that runs the layers.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "request/layer_reads.h"
#include "kvstore/prefix_store.h"
#include "request/request_trace.h"
#include "select/method.h"

namespace impress {

class StoreSource final : public PrefixSource {
 public:
  // `new_tokens`: the request's tokens after the prefix; the keys it hands
  // out have room for theirs (key_room).
  StoreSource(PrefixStore& store, const Model& model, const PrefixLease& lease, ReadAhead ahead,
              const RequestOptions& ro, int64_t new_tokens, RequestTrace* trace);
  // Layer l's query-independent read: the one started early, else read now.
  Status Begin(int l);
  // Starts the query-independent reads of layers l .. l + read_ahead - 1
  // on other threads, each at most once, each guessing (speculation) from
  // the set gathered last (a no-op without prefetch or past the last layer).
  // The constructor starts layer 0's.
  void Start(int l);

  int64_t tokens() const override { return chunks() * store_.geometry().chunk_tokens; }
  int64_t chunks() const override { return static_cast<int64_t>(chunks_.size()); }
  at::Tensor ChunkOf(int layer) override;
  Status All(int layer, at::Tensor* k, at::Tensor* v) override;
  Status Keys(int layer, at::Tensor* k) override;
  Status ProbeKeys(int layer, int64_t kv_heads, at::Tensor* k) override;
  int64_t key_room() const override { return key_room_; }
  Status Values(int layer, const at::Tensor& used, at::Tensor* v) override;
  Status Gather(int layer, const at::Tensor& positions, at::Tensor* k, at::Tensor* v) override;
  // From the store's resident digests of the lease's chunks.
  Status DigestKeys(int layer, at::Tensor* k) override;
  Status DigestInt8(int layer, Int8Keys* keys) override;
  // CUDA: the layers' device intervals (once the logits are on the host).
  std::vector<DeviceLayerTimes> DeviceTimes() { return first_reads_.DeviceTimes(&demand_spans_); }

 private:
  // `x` (host) as `type` on the model's device, the copy timed as demand
  // work (demand_spans_); `x` itself when it is already that.
  at::Tensor OnModelDevice(const at::Tensor& x, at::ScalarType type);
  // Calls put(digest, first row) for each chunk's digest of `layer`, in
  // stored order, adding its bytes to *bytes. Errors: a chunk without one.
  Status ForEachDigest(int layer, const std::function<void(const at::Tensor&, int64_t)>& put, int64_t* bytes) const;
  // Layer `layer`'s int8 digests in token order, as DigestInt8 hands them
  // out, on the model's device (the copy within `spans` when not null).
  // Thread-safe: the read-ahead calls it.
  Status AssembleInt8(int layer, Int8Keys* keys, int64_t* bytes, DeviceSpans* spans) const;
  // A layer's guess at the next one's chunks: its gathered positions and
  // how many chunks they took in its own stored order.
  struct Guess {
    at::Tensor tokens;  // token positions, host
    int64_t chunks = 0;
  };
  struct FirstRead {
    Status status;
    std::vector<ChunkParts> parts;
    LoadStats stats;
    std::vector<int64_t> guessed;  // chunk indices whose K and V were read on the guess, ascending
    // Stacked in token order: ReadAhead::kAll every chunk's keys and values;
    // kKeys the keys; kProbeKeys the probe keys ([probe KV heads, P, d]).
    at::Tensor k, v;
    Int8Keys digests;          // ReadAhead::kDigests: AssembleInt8's
    int64_t digest_bytes = 0;  // ... and the digest bytes it read
  };
  FirstRead ReadFirst(int l, DeviceSpans* spans);
  void StartRead(int l);  // layer l's first read with last_guess_, unless started
  std::vector<int64_t> GuessedChunks(const Guess& g, int l) const;
  std::vector<int64_t> Every() const;  // every chunk index, ascending
  // Makes `what` present for the chunks `which` of the current layer (no
  // read when they have it).
  Status FetchSome(uint8_t what, const std::vector<int64_t>& which);
  // One part of the chunks `which`, stacked (ChunkReader::StackChunks, `rows` of their concatenation).
  at::Tensor Stack(const std::vector<int64_t>& which, at::Tensor ChunkParts::*part, const at::Tensor& rows,
                   int64_t room = 0);
  // ChunkReader::StackChunks on the compute thread, within the layer's on-demand spans.
  at::Tensor StackNow(const std::vector<at::Tensor>& parts, const at::Tensor& rows, int64_t heads = 0,
                      int64_t room = 0);
  // The rows of every chunk's concatenation in token order for layer l (undefined: as stored).
  at::Tensor TokenOrder(int l) const;
  // Tells the cache policy that the current layer used every token (placement).
  void ObserveWhole();
  // Read accounting for a selection that used `slots` from the chunks `need`.
  void CountImportant(const at::Tensor& slots, const std::vector<int64_t>& need);

  PrefixStore& store_;
  const Model& model_;
  const PrefixLease& lease_;
  const std::vector<uint64_t>& chunks_;
  RequestTrace* trace_;
  bool prefetch_;
  uint8_t first_parts_;  // ChunkPart bits of every layer's first read
  Speculation speculate_;  // RequestOptions::speculate where it applies, else kOff
  int read_ahead_;         // RequestOptions::read_ahead, at least 1
  bool digests_ahead_;     // ReadAhead::kDigests: the first read puts the layer's digests together
  int64_t key_room_;     // rows after each head's in the keys handed out
  int layer_ = -1;       // the layer Begin last took
  std::vector<ChunkParts> parts_;  // what the current layer has read
  at::Tensor all_k_, all_v_;       // the current layer's FirstRead::k and v
  Int8Keys digests_;               // ... and FirstRead::digests
  // The last gathering layer's, written by its Gather on the layers' thread.
  Guess last_guess_;
  // Per layer, the guess its first read takes: last_guess_ as it was when
  // Start launched that read (written before the launch, then read only by
  // that read, which Begin takes).
  std::vector<Guess> guess_of_;
  std::vector<int64_t> guessed_;  // the current layer's chunks read on the guess
  // Per layer, the lease's slots (token order) on the model's device, and
  // the point on the compute stream after their copies up (CUDA).
  std::vector<at::Tensor> token_order_;
  LoadStream::Ready token_order_ready_;
  // Per layer (CUDA): the device work of reads after its selection, on the compute stream.
  std::vector<DeviceSpans> demand_spans_;
  LayerReads<FirstRead> first_reads_;  // last: it waits for running reads before the rest goes
};

}  // namespace impress
