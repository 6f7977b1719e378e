#include "kvstore/chunk_reader.h"

#include <ATen/ATen.h>

#include <array>

#include "common/device_copy.h"
#include "common/status.h"
#include "kvstore/chunk_codec.h"
#include "kvstore/stack_chunks.h"

namespace impress {

ChunkReader::ChunkReader(const ChunkReaderOptions& opt, TieredCache* cache, Backends* backends,
                         const LoadStream* stream)
    : opt_(opt), cache_(cache), backends_(backends), stream_(stream) {}

// One (chunk, layer) the caches did not serve whole: the parts still to read
// and the tensors they land in.
struct ChunkReader::Pending {
  size_t index = 0;    // into the request's chunks and *out
  uint8_t parts = 0;   // ChunkPart bits still missing
  bool fresh = false;  // nothing of it fetched before: counts as one chunk read
  std::array<at::Tensor, 3> got;  // each part as served: keys, values, probe keys
  std::array<at::Tensor, 3> raw;  // what the backend writes into: `got` itself, or its encoded bytes
};

std::vector<ChunkReader::Pending> ChunkReader::ServeFromCache(const std::vector<uint64_t>& chunks, int layer,
                                                              const std::vector<uint8_t>& parts,
                                                              std::vector<ChunkParts>* out, LoadStats* stats) {
  std::vector<Pending> pending;
  for (size_t i = 0; i < chunks.size(); ++i) {
    ChunkParts& p = (*out)[i];
    uint8_t missing = 0;
    if ((parts[i] & kKeys) && !p.k.defined()) missing |= kKeys;
    if ((parts[i] & kValues) && !p.v.defined()) missing |= kValues;
    if ((parts[i] & kProbeKeys) && !p.probe.defined() && !p.k.defined()) missing |= kProbeKeys;
    if (!missing) continue;
    if (!p.k.defined() && !p.v.defined()) {  // untouched: the caches may hold it whole
      Tier tier;
      int64_t served = 0;
      auto hit = cache_->Get(ChunkKey{chunks[i], layer}.packed(), &tier, &served);
      if (hit) {
        static_cast<ChunkKv&>(p) = std::move(*hit);
        p.tier = tier;
        stats->hits[static_cast<int>(tier)]++;
        stats->bytes[static_cast<int>(tier)] += served;
        stats->chunks++;
        continue;
      }
    }
    Pending r;
    r.index = i;
    r.parts = missing;
    r.fresh = !p.k.defined() && !p.v.defined() && !p.probe.defined();
    pending.push_back(std::move(r));
  }
  return pending;
}

// Without a codec each part is read straight into its tensor; with one, into
// a buffer that fits the largest encoding, to be decoded: on the host, or on
// CUDA on the device, after its encoded bytes go up.
std::vector<ChunkRead> ChunkReader::PlanReads(const std::vector<uint64_t>& chunks, int layer,
                                              std::vector<Pending>* pending) const {
  const ChunkGeometry& g = opt_.geometry;
  const std::vector<int64_t> full = {g.chunk_tokens, g.kv_heads, g.head_dim};
  const std::vector<int64_t> probe = {g.chunk_tokens, g.probe_kv_heads, g.head_dim};
  const bool cuda = opt_.device.is_cuda();
  const bool encoded = g.codec != KvCodec::kNone;
  const auto host = at::TensorOptions().dtype(opt_.kv_type).pinned_memory(cuda);
  const auto bytes_host = at::TensorOptions().dtype(at::kByte).pinned_memory(cuda);
  std::vector<ChunkRead> reads;
  for (Pending& r : *pending) {
    uint8_t* dst[3] = {nullptr, nullptr, nullptr};
    for (int part = 0; part < 3; ++part) {
      if (!(r.parts & (1 << part))) continue;  // ChunkPart: keys, values, probe keys
      if (!(encoded && cuda)) r.got[part] = at::empty(part == 2 ? probe : full, host);
      r.raw[part] = encoded ? at::empty({static_cast<int64_t>(g.MaxPartBytes(part))}, bytes_host) : r.got[part];
      dst[part] = static_cast<uint8_t*>(r.raw[part].data_ptr());
    }
    reads.push_back({chunks[r.index], layer, r.parts, dst[0], dst[1], dst[2]});
  }
  return reads;
}

// Decodes what was read under a codec (keeping the encoded keys and values
// for the caches) and sends each part up to the model's device once.
void ChunkReader::TakeReads(const std::vector<ChunkRead>& reads, const std::vector<Tier>& from,
                            std::vector<Pending>* pending, std::vector<ChunkParts>* out, LoadStats* stats,
                            TierCounts* bytes) const {
  const ChunkGeometry& g = opt_.geometry;
  const bool cuda = opt_.device.is_cuda();
  const bool encoded = g.codec != KvCodec::kNone;
  for (size_t j = 0; j < pending->size(); ++j) {
    Pending& r = (*pending)[j];
    ChunkParts& p = (*out)[r.index];
    for (int part = 0; part < 3; ++part) {
      if (!(r.parts & (1 << part))) continue;
      const size_t paid = g.PartBytes(part, reads[j].codec);
      (*bytes)[from[j]] += static_cast<int64_t>(paid);  // what was paid below
      if (!encoded) continue;
      at::Tensor held = r.raw[part].narrow(0, 0, static_cast<int64_t>(paid));
      if (cuda) r.got[part] = DecodeChunkPartOn(g, part, reads[j].codec, ToDevice(held, opt_.device), opt_.kv_type);
      else DecodeChunkPart(g, part, reads[j].codec, held.data_ptr<uint8_t>(), &r.got[part]);
      if (part == 2) continue;
      // A cache counts what it holds:
      p.enc.bytes[part] = paid < r.raw[part].nbytes() ? held.clone() : held;  // no spare room
      p.enc.codec = reads[j].codec;
    }
    // On CUDA each part read goes up once, here (from pinned memory, only
    // enqueued on this thread's stream); the cache takes that copy.
    if (r.parts & kKeys) p.k = ToDevice(r.got[0], opt_.device);
    if (r.parts & kValues) p.v = ToDevice(r.got[1], opt_.device);
    if (r.parts & kProbeKeys) p.probe = ToDevice(r.got[2], opt_.device);
    p.tier = from[j];
    if (r.fresh) {
      stats->read[from[j]]++;
      stats->chunks++;
    }
  }
}

// Offers every chunk now whole (keys and values) to the cache, on CUDA with
// the event after its copies up and, where both were read now and stored
// plain, their pinned sources for a host level to keep.
void ChunkReader::OfferToCache(const std::vector<uint64_t>& chunks, int layer, const std::vector<Pending>& pending,
                               const std::vector<ChunkParts>& out) {
  const bool encoded = opt_.geometry.codec != KvCodec::kNone;
  std::shared_ptr<void> copied = StreamPoint(opt_.device);  // after every copy up (null on the CPU)
  for (const Pending& r : pending) {
    const ChunkParts& p = out[r.index];
    if (!p.k.defined() || !p.v.defined()) continue;
    ChunkKv kv = p;  // the parts the cache holds: keys, values, their encoded bytes
    kv.sent_up = true;  // Fetch pays the link for what it read (RecordRead)
    if (copied != nullptr) {
      kv.ready = copied;
      if (!encoded && (r.parts & kKeys) && (r.parts & kValues)) {
        kv.host_k = r.got[0];
        kv.host_v = r.got[1];
      }
    }
    cache_->Put(ChunkKey{chunks[r.index], layer}.packed(), kv);
  }
}

Status ChunkReader::Fetch(const std::vector<uint64_t>& chunks, int layer, const std::vector<uint8_t>& parts,
                          std::vector<ChunkParts>* out, LoadStats* stats, DeviceSpans* spans) {
  IMPRESS_CHECK(parts.size() == chunks.size());
  DeviceSpans none;
  if (spans == nullptr) spans = &none;
  out->resize(chunks.size());
  spans->Open();  // hits in a lower level are copied up
  std::vector<Pending> pending = ServeFromCache(chunks, layer, parts, out, stats);
  spans->Close();
  if (pending.empty()) return Status::OK();
  std::vector<ChunkRead> reads = PlanReads(chunks, layer, &pending);
  std::vector<Tier> from;
  RETURN_IF_ERROR(backends_->Read(&reads, &from));
  TierCounts bytes;
  spans->Open();  // what was read goes up
  TakeReads(reads, from, &pending, out, stats, &bytes);
  OfferToCache(chunks, layer, pending, *out);
  spans->Close();
  stats->bytes += bytes;
  for (Tier t : kTiers)  // `bytes` holds only what the backends read, by each one's tier
    if (bytes[t] > 0) cache_->RecordRead(t, bytes[t]);
  return Status::OK();
}

void ChunkReader::WarmPinnedPool(int64_t bytes) const {
  if (!opt_.device.is_cuda()) return;
  const ChunkGeometry& g = opt_.geometry;
  const auto pinned = at::TensorOptions().dtype(opt_.kv_type).pinned_memory(true);
  std::vector<at::Tensor> held;
  int64_t taken = 0;
  while (taken < bytes) {  // keys and values, then the probe copy, as a read takes them
    held.push_back(at::empty({g.chunk_tokens, g.kv_heads, g.head_dim}, pinned));
    held.push_back(at::empty({g.chunk_tokens, g.kv_heads, g.head_dim}, pinned));
    held.push_back(at::empty({g.chunk_tokens, g.probe_kv_heads, g.head_dim}, pinned));
    for (size_t i = held.size() - 3; i < held.size(); ++i) taken += static_cast<int64_t>(held[i].nbytes());
  }
}

void ChunkReader::ObserveWhole(const std::vector<uint64_t>& chunks, int layer) {
  if (!cache_->wants_observations()) return;
  std::vector<std::pair<uint64_t, double>> shares;
  for (uint64_t c : chunks) shares.push_back({ChunkKey{c, layer}.packed(), 1.0});
  cache_->Observe(shares);
}

at::Tensor ChunkReader::StackChunks(const std::vector<at::Tensor>& parts, const at::Tensor& rows, int64_t heads,
                                    int64_t room) const {
  std::vector<at::Tensor> on;
  on.reserve(parts.size());
  for (const auto& p : parts) {
    stream_->HandOver(p);  // a cached chunk may be made and freed on other streams
    on.push_back(ToDevice(p, opt_.device));
  }
  return StackChunkRows(on, rows, opt_.compute_type, heads, room);
}

}  // namespace impress
