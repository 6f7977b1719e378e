// What the digest system's two scorers share (select/digest_keys.cc over
// fp32 keys, select/digest_int8.cc over int8 codes): the new tokens' exact
// scores, each row's softmax summed per chunk, and the runs of positions one
// chunk holds. Internal to select/.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

namespace impress {

// Runs of equal chunk ids in position order: positions [start[j], start[j+1]) are chunk[j]'s.
struct ChunkRuns {
  std::vector<int64_t> start, chunk;
};
ChunkRuns RunsOf(const at::Tensor& chunk_of);

// Each query row's scores over the new keys it may see: qf [Hkv, G*W, d]
// (fp32, times the softmax scale) holds rows first_row..first_row+W-1 of
// each of a group's G query heads; new_k [Hkv, T, d]. [Hkv, G*W, T] fp32,
// -inf where a new key comes after the row.
at::Tensor NewKeyScores(const at::Tensor& qf, const at::Tensor& new_k, int64_t g, int64_t w, int64_t first_row);

// Each row's softmax over its prefix scores `sp` [Hkv, R, P] and its new-key
// scores `sn` [Hkv, R, T] (both fp32; both overwritten), the prefix's part
// max-pooled over `pool` positions (odd; 1: none) and summed per chunk
// (chunk_of [P] names each position's chunk, 0..n_chunks-1): [Hkv, R, C].
// The exponentials are summed per chunk before the division by the row's total.
at::Tensor SoftmaxChunkMass(at::Tensor sp, at::Tensor sn, const at::Tensor& chunk_of, int64_t n_chunks,
                            int64_t pool);

}  // namespace impress
