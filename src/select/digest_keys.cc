// Chunk scores from digests: the keys a digest gives, and the two ways of
// scoring chunks from them (select/digest.h).
#include <ATen/ATen.h>

#include <limits>
#include <vector>

#include "codec/key_digest.h"
#include "common/status.h"
#include "select/chunk_mass.h"
#include "select/digest.h"

namespace impress {

at::Tensor DigestRoundTrip(const at::Tensor& keys, int64_t chunk_tokens, DigestCodec codec) {
  const int64_t p = keys.size(1);
  const at::Tensor host = keys.to(at::kCPU, at::kHalf).transpose(0, 1).contiguous();  // [P, Hkv, d]
  at::Tensor out = at::empty({keys.size(0), p, keys.size(2)}, at::kFloat);
  for (int64_t s = 0; s < p; s += chunk_tokens) {
    const int64_t n = std::min(chunk_tokens, p - s);
    DecodeDigestRows(codec, EncodeDigest(codec, host.narrow(0, s, n).contiguous()), out, s, n);
  }
  return out.to(keys.device(), keys.scalar_type());
}

namespace {

// Quest's bound for every query row and chunk: [Hq, T, C].
at::Tensor QuestBounds(const at::Tensor& q, const at::Tensor& digest_keys, float scale, const at::Tensor& chunk_of,
                       int64_t n_chunks) {
  const int64_t hq = q.size(0), t = q.size(1), hkv = digest_keys.size(0), p = digest_keys.size(1),
                d = digest_keys.size(2), g = hq / hkv;
  const at::Tensor kf = digest_keys.to(at::kFloat);
  const at::Tensor idx = chunk_of.to(kf.device(), at::kLong).view({1, p, 1}).expand({hkv, p, d});
  const float inf = std::numeric_limits<float>::infinity();
  const at::Tensor lo = at::full({hkv, n_chunks, d}, inf, kf.options()).scatter_reduce_(1, idx, kf, "amin", true);
  const at::Tensor hi = at::full({hkv, n_chunks, d}, -inf, kf.options()).scatter_reduce_(1, idx, kf, "amax", true);
  // max(q min, q max) summed over d = q+ . max + q- . min.
  const at::Tensor qf = (q.to(at::kFloat) * scale).reshape({hkv, g * t, d});
  return (at::bmm(qf.clamp_min(0), hi.transpose(1, 2)) + at::bmm(qf.clamp_max(0), lo.transpose(1, 2)))
      .view({hq, t, n_chunks});
}

// Each query row's attention over the prefix (digest keys, then the new
// tokens it may see), summed over each chunk's tokens (SoftmaxChunkMass); a
// chunk's score is its best row's: [Hq, C].
at::Tensor RowMaxChunkMass(const at::Tensor& rows, int64_t first_row, const at::Tensor& digest_keys,
                           const at::Tensor& new_k, float scale, const at::Tensor& chunk_of, int64_t n_chunks,
                           int64_t pool) {
  const int64_t hq = rows.size(0), w = rows.size(1), hkv = digest_keys.size(0), d = digest_keys.size(2),
                g = hq / hkv;
  const at::Tensor qf = (rows.to(at::kFloat) * scale).reshape({hkv, g * w, d});
  at::Tensor sp = at::bmm(qf, digest_keys.to(at::kFloat).transpose(1, 2));  // [Hkv, G*W, P], ours
  const at::Tensor mass = SoftmaxChunkMass(sp, NewKeyScores(qf, new_k, g, w, first_row), chunk_of, n_chunks, pool);
  return std::get<0>(mass.view({hkv, g, w, n_chunks}).max(2)).reshape({hq, n_chunks});
}

}  // namespace

at::Tensor DigestChunkScores(const at::Tensor& q, const at::Tensor& digest_keys, const at::Tensor& new_k,
                             float scale, int64_t window, const at::Tensor& chunk_of,
                             int64_t n_chunks, DigestScore how, int64_t room, int64_t pool) {
  const int64_t hq = q.size(0), t = q.size(1), hkv = digest_keys.size(0);
  IMPRESS_CHECK(hq % hkv == 0 && chunk_of.numel() == digest_keys.size(1));
  at::Tensor per_head;  // [Hq, C]
  if (how == DigestScore::kRowMax) {
    const int64_t w = window > 0 && window < t ? window : t;
    per_head = RowMaxChunkMass(q.narrow(1, t - w, w), t - w, digest_keys, new_k, scale, chunk_of, n_chunks, pool);
  } else if (how == DigestScore::kBound) {
    const at::Tensor rows = window > 0 && window < t ? q.narrow(1, t - window, window) : q;
    per_head = at::softmax(QuestBounds(rows, digest_keys, scale, chunk_of, n_chunks), -1).sum(1);
  } else {
    const at::Tensor imp = ShapedImportance(q, digest_keys, new_k, scale, ImportanceShape{window, pool}, room);
    per_head = at::zeros({hq, n_chunks}, imp.options()).index_add_(1, chunk_of.to(imp.device(), at::kLong), imp);
  }
  return std::get<0>(per_head.view({hkv, hq / hkv, n_chunks}).max(1));
}

}  // namespace impress
