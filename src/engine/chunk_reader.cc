#include "engine/chunk_reader.h"

#include <ATen/ATen.h>

#include <array>

#include "common/device_copy.h"
#include "common/status.h"
#include "engine/chunk_codec.h"
#include "engine/stack_chunks.h"

namespace impress {

ChunkReader::ChunkReader(const ChunkReaderOptions& opt, TieredCache* cache, std::vector<ChunkBackend*> backends,
                         const LoadStream* stream)
    : opt_(opt), cache_(cache), backends_(std::move(backends)), stream_(stream) {
  IMPRESS_CHECK(!backends_.empty());
}

Status ChunkReader::ReadBackends(std::vector<ChunkRead>* reads, std::vector<Tier>* tiers) {
  const size_t nb = backends_.size();
  std::vector<std::vector<ChunkRead>> batch(nb);
  std::vector<std::vector<size_t>> from(nb);  // batch[b][i] is reads[from[b][i]]
  if (tiers != nullptr) tiers->resize(reads->size());
  for (size_t j = 0; j < reads->size(); ++j) {
    const ChunkRead& r = (*reads)[j];
    size_t b = 0;
    while (b + 1 < nb && !backends_[b]->Holds(r.chunk_id, r.layer)) ++b;
    batch[b].push_back(r);
    from[b].push_back(j);
    if (tiers != nullptr) (*tiers)[j] = backends_[b]->tier();
  }
  for (size_t b = 0; b < nb; ++b) {
    if (batch[b].empty()) continue;
    RETURN_IF_ERROR(backends_[b]->Read(&batch[b]));
    for (size_t i = 0; i < batch[b].size(); ++i) (*reads)[from[b][i]].codec = batch[b][i].codec;
  }
  return Status::OK();
}

Status ChunkReader::Fetch(const std::vector<uint64_t>& chunks, int layer, const std::vector<uint8_t>& parts,
                          std::vector<ChunkParts>* out, LoadStats* stats, DeviceSpans* spans) {
  IMPRESS_CHECK(parts.size() == chunks.size());
  DeviceSpans none;
  if (spans == nullptr) spans = &none;
  out->resize(chunks.size());
  const ChunkGeometry& g = opt_.geometry;
  std::vector<size_t> todo;
  std::vector<uint8_t> need(chunks.size(), 0);
  std::vector<bool> fresh(chunks.size(), false);  // nothing of it fetched before: counts as one chunk read
  spans->Open();  // hits in a lower level are copied up
  for (size_t i = 0; i < chunks.size(); ++i) {
    ChunkParts& p = (*out)[i];
    uint8_t missing = 0;
    if ((parts[i] & kKeys) && !p.k.defined()) missing |= kKeys;
    if ((parts[i] & kValues) && !p.v.defined()) missing |= kValues;
    if ((parts[i] & kProbeKeys) && !p.probe.defined() && !p.k.defined()) missing |= kProbeKeys;
    if (!missing) continue;
    Tier tier;
    if (!p.k.defined() && !p.v.defined()) {  // untouched: the caches may hold it whole
      int64_t served = 0;
      auto hit = cache_->Get(CacheKey(chunks[i], layer), &tier, &served);
      if (hit) {
        p.k = hit->k;
        p.v = hit->v;
        p.tier = tier;
        stats->hits[static_cast<int>(tier)]++;
        stats->bytes[static_cast<int>(tier)] += served;
        stats->chunks++;
        continue;
      }
    }
    need[i] = missing;
    fresh[i] = !p.k.defined() && !p.v.defined() && !p.probe.defined();
    todo.push_back(i);
  }
  spans->Close();
  if (todo.empty()) return Status::OK();
  const std::vector<int64_t> full = {g.chunk_tokens, g.kv_heads, g.head_dim};
  const std::vector<int64_t> probe = {g.chunk_tokens, g.probe_kv_heads, g.head_dim};
  const bool cuda = opt_.device.is_cuda();
  const auto host = at::TensorOptions().dtype(opt_.kv_type).pinned_memory(cuda);
  // Without a codec each part is read straight into its tensor; with one,
  // into a buffer that fits the largest encoding, then decoded: on the host,
  // or on CUDA on the device, after its encoded bytes go up.
  const bool encoded = g.codec != KvCodec::kNone;
  const auto bytes_host = at::TensorOptions().dtype(at::kByte).pinned_memory(cuda);
  std::vector<std::array<at::Tensor, 3>> got(todo.size()), raw(todo.size());
  std::vector<ChunkRead> reads;
  for (size_t j = 0; j < todo.size(); ++j) {
    const uint8_t m = need[todo[j]];
    uint8_t* dst[3] = {nullptr, nullptr, nullptr};
    for (int part = 0; part < 3; ++part) {
      if (!(m & (1 << part))) continue;  // ChunkPart: keys, values, probe keys
      if (!(encoded && cuda)) got[j][part] = at::empty(part == 2 ? probe : full, host);
      raw[j][part] = encoded ? at::empty({static_cast<int64_t>(g.MaxPartBytes(part))}, bytes_host) : got[j][part];
      dst[part] = static_cast<uint8_t*>(raw[j][part].data_ptr());
    }
    reads.push_back({chunks[todo[j]], layer, m, dst[0], dst[1], dst[2]});
  }
  std::vector<Tier> from;
  RETURN_IF_ERROR(ReadBackends(&reads, &from));
  TierCounts bytes;
  spans->Open();  // what was read goes up
  for (size_t j = 0; j < todo.size(); ++j) {
    ChunkParts& p = (*out)[todo[j]];
    const uint8_t m = need[todo[j]];
    const Tier tier = from[j];
    for (int part = 0; part < 3; ++part) {
      if (!(m & (1 << part))) continue;
      const size_t paid = g.PartBytes(part, reads[j].codec);
      bytes[tier] += static_cast<int64_t>(paid);  // what was paid below
      if (!encoded) continue;
      at::Tensor held = raw[j][part].narrow(0, 0, static_cast<int64_t>(paid));
      if (cuda) got[j][part] = DecodeChunkPartOn(g, part, reads[j].codec, ToDevice(held, opt_.device), opt_.kv_type);
      else DecodeChunkPart(g, part, reads[j].codec, held.data_ptr<uint8_t>(), &got[j][part]);
      if (part == 2) continue;
      // A cache counts what it holds:
      (part == 0 ? p.enc.k : p.enc.v) = paid < raw[j][part].nbytes() ? held.clone() : held;  // no spare room
      p.enc.codec = reads[j].codec;
    }
    // On CUDA each part read goes up once, here (from pinned memory, only
    // enqueued on this thread's stream); the cache takes that copy.
    if (m & kKeys) p.k = ToDevice(got[j][0], opt_.device);
    if (m & kValues) p.v = ToDevice(got[j][1], opt_.device);
    if (m & kProbeKeys) p.probe = ToDevice(got[j][2], opt_.device);
    p.tier = tier;
    if (fresh[todo[j]]) {
      (tier == Tier::kRemote ? stats->remote_chunks : stats->disk_chunks)++;
      stats->chunks++;
    }
  }
  std::shared_ptr<void> copied = StreamPoint(opt_.device);  // after every copy up above (null on the CPU)
  for (size_t j = 0; j < todo.size(); ++j) {
    const ChunkParts& p = (*out)[todo[j]];
    if (!p.k.defined() || !p.v.defined()) continue;
    ChunkKv kv{p.k, p.v, p.enc};
    if (copied != nullptr) {
      kv.ready = copied;
      const uint8_t m = need[todo[j]];
      if (!encoded && (m & kKeys) && (m & kValues)) {  // both read now: a host level takes their pinned source
        kv.host_k = got[j][0];
        kv.host_v = got[j][1];
      }
    }
    cache_->Put(CacheKey(chunks[todo[j]], layer), kv);
  }
  spans->Close();
  stats->bytes += bytes;
  for (Tier t : {Tier::kDisk, Tier::kRemote})
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
  for (uint64_t c : chunks) shares.push_back({CacheKey(c, layer), 1.0});
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
