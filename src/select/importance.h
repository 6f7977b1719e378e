// Token importance and IMPRESS's similarity-guided identification (docs/paper.md,
// section 1), as pure functions on tensors: the selectors of the H2O and
// IMPRESS systems are built from these.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace impress {

// Whether `x` is fp32 in host memory: what the selection code's host loops read.
inline bool HostFloat(const at::Tensor& x) { return x.is_cpu() && x.scalar_type() == at::kFloat; }

// H2O importance of each prefix token for each query head: the column sums,
// over the new tokens' query rows, of the true attention weights (softmax
// over the prefix keys and the new tokens' own keys up to the row).
//   q        [Hq, T, d]  new tokens' queries (RoPE applied, unscaled)
//   prefix_k [Hkv, P, d] prefix keys the heads use (query head h uses h / (Hq / Hkv))
//   new_k    [Hkv, T, d] new tokens' keys
//   room     rows after each head's P rows in prefix_k's memory that this call
//            may overwrite (PrefixSource::key_room): with exactly T of them on
//            fp32 host keys, new_k is written there instead of both being
//            copied into one tensor; the result is the same.
// Returns [Hq, P] in fp32.
at::Tensor PrefixImportance(const at::Tensor& q, const at::Tensor& prefix_k, const at::Tensor& new_k, float scale,
                            int64_t room = 0);

// Which query rows an importance sums and how it is smoothed (SnapKV's
// observation window): the defaults are H2O's, every row and no smoothing.
struct ImportanceShape {
  int64_t window = 0;  // > 0: only the last `window` query rows (the question's end), else every row
  int64_t pool = 1;    // > 1 (odd): each score becomes the max over `pool` neighbouring positions
  bool exact() const { return window <= 0 && pool <= 1; }
};

// PrefixImportance over the rows `shape` names, then max-pooled along the
// prefix: [Hq, P] fp32. Rows keep their causal view (the last row sees every
// new key). With exact() it is PrefixImportance, bit for bit.
at::Tensor ShapedImportance(const at::Tensor& q, const at::Tensor& prefix_k, const at::Tensor& new_k, float scale,
                            const ImportanceShape& shape, int64_t room = 0);

// H2O's accumulated attention over a sequence's own prefill, the static
// importance of the paper's SPI: each token's attention weight from every
// row at or after it (causal), summed per query head. q [Hq, T, d] (RoPE
// applied, unscaled), k [Hkv, T, d]; returns [Hq, T] in fp32 on q's device.
at::Tensor SelfImportance(const at::Tensor& q, const at::Tensor& k, float scale);

// Indices of the k highest scores per row of `importance` [H, P], ascending:
// [H, k], on its device; among equal scores at the k-th, the lower indices.
at::Tensor TopKSets(const at::Tensor& importance, int64_t k);

// The union of the rows of `sets` [H, k] (indices below p), ascending, and
// the mask [H, p] (bool) of each row's own: H2O's tokens to read and each
// head's view of them. Both on the host.
void SetsUnion(const at::Tensor& sets, int64_t p, at::Tensor* used, at::Tensor* mask);

// |A ∩ B| / |A ∪ B| of two index sets given as 1-D tensors of distinct non-negative indices.
double Jaccard(const at::Tensor& a, const at::Tensor& b);
// Mean Jaccard index over all pairs of rows of `sets` [H, k].
// REQUIRES: H >= 2; each row holds distinct non-negative indices
double MeanPairwiseJaccard(const at::Tensor& sets);

// The trust threshold t = j^alpha, where j = (k/n) / (2 - k/n) is the expected
// Jaccard index of two random k-subsets of n. alpha = 0 gives t = 1.
double SimilarityThreshold(int64_t k, int64_t n, double alpha);

// The set the probe heads agree on: tokens ranked by how many rows of `sets`
// hold them, ties broken by summed importance over the rows (then by lower
// index); exactly k, ascending. sets [H, k], importance [H, P].
at::Tensor AgreedSet(const at::Tensor& sets, const at::Tensor& importance, int64_t k);

// The chunk-granular agreed set: exactly k tokens from as few chunks as the
// ranking allows. Chunks are ranked by their tokens' importance summed over
// the rows of `importance` [H, P] (ties: lower chunk first) and taken whole,
// best first, while they fit; the chunk that would overflow k gives its most
// important tokens (ties: lower position). Returns positions, ascending, int64
// on the host. `chunk_of` [P] (int64) names each token's chunk,
// 0..n_chunks-1: with reordered storage a chunk holds scattered positions.
// REQUIRES: 1 <= k <= P.
at::Tensor AgreedChunkTokens(const at::Tensor& importance, const at::Tensor& chunk_of, int64_t n_chunks, int64_t k);

struct ItfDecision {
  bool trusted = false;     // similarity > threshold: the agreed set serves every head
  double similarity = 0;    // mean pairwise Jaccard of the probe heads' sets
  double threshold = 1;
  at::Tensor agreed;        // when trusted: AgreedSet, or AgreedChunkTokens given chunks
};

// IMPRESS's test on the probe heads' importance [H_probe, P]. With
// `chunk_of` defined (see AgreedChunkTokens) a trusted decision keeps whole
// chunks instead of the k agreed tokens (ItfUnit::kChunk).
ItfDecision DecideItf(const at::Tensor& probe_importance, int64_t k, double alpha, const at::Tensor& chunk_of = {},
                      int64_t n_chunks = 0);

// k = ceil(retention * n), at least 1 and at most n.
int64_t RetainedTokens(double retention, int64_t n);

}  // namespace impress
