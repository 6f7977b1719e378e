// The digest system's steps (select/digest.cc), as pure functions on
// tensors: each chunk's keys seen through its digest (codec/key_digest.h),
// chunk scores from them, the layer's chunk order and the kept positions.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "codec/key_digest.h"
#include "select/importance.h"

namespace impress {

// `keys` [Hkv, P, d] with each run of `chunk_tokens` positions (the last may
// be short) put through its digest of `codec`'s bits and back (DecodeDigestRows, fp32), as a
// store that keeps digests serves them: [Hkv, P, d] in keys' dtype, on its device.
at::Tensor DigestRoundTrip(const at::Tensor& keys, int64_t chunk_tokens, DigestCodec codec);

// How chunks are scored from their digests.
enum class DigestScore : uint8_t {
  kKeys,   // H2O's importance over the digest's keys, summed over each chunk's tokens
  kBound,  // Quest's: per query row, a softmax over chunks of the bound sum_d max(q_d min_d, q_d max_d)
           // from the chunk's per-channel min and max, summed over the rows
  kRowMax,  // per query row, its attention over the digest's keys summed over each chunk's tokens;
            // a chunk's score is its best row's
};

// Each chunk's score for each KV group [Hkv, C] fp32: the chunk scores of
// each query head from its last `window` rows (0: every row), the best over
// the group's query heads. `pool` > 1 (odd): each token's score (kKeys: its
// importance; kRowMax: each row's attention) is first the max over `pool`
// neighbouring positions, so a chunk holding the tokens right after a found
// one scores as well (kBound: unused).
//   q [Hq, T, d] new tokens' queries (RoPE applied, unscaled); new_k [Hkv, T, d];
//   digest_keys [Hkv, P, d] (PrefixSource::DigestKeys) with `room` free rows
//   after each head's (PrefixImportance's room: 0 or T); chunk_of [P] int64
//   names each position's chunk, 0..n_chunks-1.
at::Tensor DigestChunkScores(const at::Tensor& q, const at::Tensor& digest_keys, const at::Tensor& new_k,
                             float scale, int64_t window, const at::Tensor& chunk_of,
                             int64_t n_chunks, DigestScore how, int64_t room = 0, int64_t pool = 1);

// kRowMax's chunk scores [Hkv, C] from an int8 digest's codes (what
// PrefixSource::DigestInt8 gives), the query rows (times `scale`) quantized
// as the digest's keys are (codec/kv_codec.h's int8: symmetric, absmax/127 per
// row, here with an fp32 scale): each score is the exact integer dot product
// of the codes times the two scales, then as DigestChunkScores' kRowMax (the
// new keys exact). On the host: the products in int32 and one pass per row
// (select/digest_int8.cc); on a device, the same numbers with device ops.
at::Tensor DigestChunkScoresInt8(const at::Tensor& q, const Int8Keys& keys, const at::Tensor& new_k, float scale,
                                 int64_t window, const at::Tensor& chunk_of, int64_t n_chunks, int64_t pool = 1);

// How the KV groups' chunk scores [Hkv, C] make the layer's one order.
enum class DigestGroups : uint8_t {
  kRank,  // by a chunk's best rank in any group (each group's best chunks first), ties by its best share
  kSum,   // by its shares of each group's total, summed over the groups
};

// The layer's chunks, best first: [C] int64 on the host. Ties: the lower chunk.
at::Tensor DigestChunkOrder(const at::Tensor& scores, DigestGroups how);

// The positions (ascending, int64, host) of whole chunks: those holding the
// first `sink` and the last `recent` positions, then chunks in `order` while
// fewer than k positions are kept.
at::Tensor DigestKeptPositions(const at::Tensor& order, const at::Tensor& chunk_of, int64_t n_chunks, int64_t k,
                               int64_t sink, int64_t recent);

}  // namespace impress
