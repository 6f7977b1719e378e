// The key digests a store keeps (StoreOptions' geometry.digests): read
// whole at open, held in host memory, added by commits, dropped by frees.
#include <ATen/ATen.h>

#include "store/chunk_store.h"

namespace impress {

Status ChunkStore::LoadDigests() {
  const ChunkGeometry& g = opt_.geometry;
  if (!g.digests) return Status::OK();
  std::vector<std::pair<uint64_t, int>> keys;
  for (const auto& [k, loc] : index_) keys.push_back(k);
  std::vector<at::Tensor> got(keys.size());
  std::vector<ChunkRead> reads;
  reads.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    got[i] = at::empty({static_cast<int64_t>(g.DigestBytes())}, at::kByte);
    reads.push_back(ChunkRead{keys[i].first, keys[i].second, kDigest});
    reads.back().digest = got[i].data_ptr();
  }
  RETURN_IF_ERROR(Read(&reads));  // a damaged digest is Corruption naming its chunk: `impress store repair` heals it
  for (size_t i = 0; i < keys.size(); ++i) digests_[keys[i]] = got[i];
  return Status::OK();
}

at::Tensor ChunkStore::Digest(uint64_t chunk_id, int layer) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = digests_.find({chunk_id, layer});
  return it == digests_.end() ? at::Tensor() : it->second;
}

uint64_t ChunkStore::digest_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return digests_.size() * opt_.geometry.DigestBytes();
}

}  // namespace impress
