#include "select/importance.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "common/status.h"

namespace impress {
namespace {

// Sets -inf in the new-token columns a row may not see: `scores` holds
// `blocks` blocks of t rows of p + t columns, row i of a block seeing new
// columns 0..i. On the host, one pass instead of building a mask tensor.
void MaskFutureColumns(float* scores, int64_t blocks, int64_t t, int64_t p) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = 0; i < t; ++i) std::fill(scores + (b * t + i) * (p + t) + p + i + 1, scores + (b * t + i + 1) * (p + t), ninf);
}

// Column sums of `importance` [H, P] in double, the rows added in order, as
// at::sum over dim 0 adds them (tests/select_test.cc checks that the two agree).
std::vector<double> ColumnSums(const at::Tensor& importance) {
  const int64_t h = importance.size(0), p = importance.size(1);
  std::vector<double> total(p, 0.0);
  auto add_rows = [&](const auto* x) {
    for (int64_t r = 0; r < h; ++r)
      for (int64_t i = 0; i < p; ++i) total[i] += static_cast<double>(x[r * p + i]);
  };
  if (HostFloat(importance) && importance.is_contiguous()) {
    add_rows(importance.data_ptr<float>());
  } else {
    const at::Tensor d = importance.to(at::kCPU, at::kDouble).contiguous();
    add_rows(d.data_ptr<double>());
  }
  return total;
}

// q in fp32 times `scale`, contiguous [Hq, T, d]. On the host one pass of the
// same float products ATen's multiply makes.
at::Tensor ScaledQueries(const at::Tensor& q, float scale) {
  if (!HostFloat(q)) return (q.to(at::kFloat) * scale).contiguous();
  const at::Tensor x = q.contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options());
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) o[i] = in[i] * scale;
  return out;
}

// at::cat({prefix_k, new_k}, 1) in fp32: [Hkv, P + T, d]. On the host
// without ATen's general concatenation: the prefix rows copied per KV head
// into a new tensor, or left where they are when prefix_k has `room` for
// exactly new_k after each head's rows; then new_k's rows after them.
at::Tensor KeysThenNew(const at::Tensor& prefix_k, const at::Tensor& new_k, int64_t room) {
  if (!HostFloat(prefix_k) || !HostFloat(new_k)) return at::cat({prefix_k, new_k}, 1).to(at::kFloat);
  const int64_t h = prefix_k.size(0), p = prefix_k.size(1), t = new_k.size(1), d = prefix_k.size(2);
  at::Tensor out;
  if (room > 0 && room == t) {
    // The keys' own strides must be those of [h, p + t, d], as the room's promise says.
    IMPRESS_CHECK(prefix_k.stride(2) == 1 && prefix_k.stride(1) == d && prefix_k.stride(0) == (p + t) * d);
    out = prefix_k.as_strided({h, p + t, d}, {(p + t) * d, d, 1});
  } else {
    const at::Tensor a = prefix_k.contiguous();
    out = at::empty({h, p + t, d}, a.options());
    for (int64_t i = 0; i < h; ++i)
      std::memcpy(out.data_ptr<float>() + i * (p + t) * d, a.data_ptr<float>() + i * p * d, p * d * sizeof(float));
  }
  const at::Tensor b = new_k.contiguous();
  for (int64_t i = 0; i < h; ++i)
    std::memcpy(out.data_ptr<float>() + (i * (p + t) + p) * d, b.data_ptr<float>() + i * t * d, t * d * sizeof(float));
  return out;
}

}  // namespace

at::Tensor SelfImportance(const at::Tensor& q, const at::Tensor& k, float scale) {
  const int64_t hq = q.size(0), t = q.size(1), d = q.size(2), hkv = k.size(0), g = hq / hkv;
  IMPRESS_CHECK(hq % hkv == 0 && k.size(1) == t);
  constexpr int64_t kRows = 256;  // rows per block: [Hq, 256, T] scores at a time
  const at::Tensor qf = (q.to(at::kFloat) * scale).view({hkv, g, t, d});
  const at::Tensor kf = k.to(at::kFloat);
  at::Tensor out = at::zeros({hq, t}, qf.options());
  const auto opts = at::TensorOptions().device(q.device()).dtype(at::kLong);
  for (int64_t r0 = 0; r0 < t; r0 += kRows) {
    const int64_t tb = std::min(kRows, t - r0), s = r0 + tb;  // columns these rows see
    const at::Tensor rows = qf.slice(2, r0, s).reshape({hkv, g * tb, d});
    at::Tensor scores = at::bmm(rows, kf.slice(1, 0, s).transpose(1, 2)).view({hkv, g, tb, s});
    const at::Tensor future = at::arange(s, opts).unsqueeze(0) > at::arange(r0, s, opts).unsqueeze(1);  // [tb, s]
    scores.masked_fill_(future, -std::numeric_limits<float>::infinity());
    out.slice(1, 0, s).add_(at::softmax(scores, -1).sum(2).reshape({hq, s}));
  }
  return out;
}

at::Tensor PrefixImportance(const at::Tensor& q, const at::Tensor& prefix_k, const at::Tensor& new_k, float scale,
                            int64_t room) {
  const int64_t hq = q.size(0), t = q.size(1), d = q.size(2);
  const int64_t hkv = prefix_k.size(0), p = prefix_k.size(1);
  IMPRESS_CHECK(hq % hkv == 0 && new_k.size(0) == hkv && new_k.size(1) == t);
  const int64_t g = hq / hkv;
  const at::Tensor qf = ScaledQueries(q, scale).view({hkv, g * t, d});
  at::Tensor scores = at::bmm(qf, KeysThenNew(prefix_k, new_k, room).transpose(1, 2)).view({hkv, g, t, p + t});
  // Row i (of the new tokens) sees every prefix column and new columns j <= i.
  if (scores.is_cpu()) {
    MaskFutureColumns(scores.data_ptr<float>(), hkv * g, t, p);
  } else {
    auto opts = at::TensorOptions().device(q.device());
    at::Tensor future =
        at::arange(t, opts.dtype(at::kLong)).unsqueeze(0) > at::arange(t, opts.dtype(at::kLong)).unsqueeze(1);
    scores.slice(3, p).masked_fill_(future, -std::numeric_limits<float>::infinity());
  }
  at::_softmax_out(scores, scores, -1, false);  // in place: each row's max, exponentials, sum and scaling
  return scores.slice(3, 0, p).sum(2).reshape({hq, p});
}

at::Tensor ShapedImportance(const at::Tensor& q, const at::Tensor& prefix_k, const at::Tensor& new_k, float scale,
                            const ImportanceShape& shape, int64_t room) {
  const int64_t t = q.size(1);
  at::Tensor imp;
  if (shape.window <= 0 || shape.window >= t) {
    imp = PrefixImportance(q, prefix_k, new_k, scale, room);
  } else {
    const int64_t hq = q.size(0), d = q.size(2), hkv = prefix_k.size(0), p = prefix_k.size(1), g = hq / hkv;
    const int64_t w = shape.window;
    IMPRESS_CHECK(hq % hkv == 0 && new_k.size(0) == hkv && new_k.size(1) == t);
    const at::Tensor qf = ScaledQueries(q.narrow(1, t - w, w), scale).view({hkv, g * w, d});
    at::Tensor scores = at::bmm(qf, KeysThenNew(prefix_k, new_k, room).transpose(1, 2)).view({hkv, g, w, p + t});
    // Window row i is new row t - w + i: it sees new columns j <= t - w + i.
    auto opts = at::TensorOptions().device(q.device()).dtype(at::kLong);
    const at::Tensor future = at::arange(t, opts).unsqueeze(0) > (at::arange(w, opts) + (t - w)).unsqueeze(1);
    scores.slice(3, p).masked_fill_(future, -std::numeric_limits<float>::infinity());
    imp = at::softmax(scores, -1).slice(3, 0, p).sum(2).reshape({hq, p});
  }
  if (shape.pool > 1) {
    IMPRESS_CHECK(shape.pool % 2 == 1);
    imp = at::max_pool1d(imp.unsqueeze(0), {shape.pool}, {1}, {shape.pool / 2}).squeeze(0);
  }
  return imp;
}

namespace {

// A float's bits as an unsigned key in the same order (-0 is +0). REQUIRES: not NaN.
inline uint32_t OrderedKey(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  if (b == 0x80000000u) b = 0;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Writes, ascending, the indices of every key above `kth` and of the first
// `ties` keys equal to it: `k` indices. REQUIRES: k - ties keys above kth.
template <class Key>
void TakeAboveAndFirstTies(const Key* key, int64_t p, Key kth, int64_t ties, int64_t k, int64_t* out) {
  for (int64_t i = 0, n = 0; i < p && n < k; ++i) {
    const bool tie = key[i] == kth && ties > 0;
    out[n] = i;
    n += (key[i] > kth) | tie;
    ties -= tie;
  }
}

// One row of TopKSets on the host: the k-th highest found by a radix select on
// the keys (four passes of eight bits), then one ascending pass that keeps what
// is above it and the first of its ties.
void TopKRowFloat(const float* x, int64_t p, int64_t k, std::vector<uint32_t>* scratch, int64_t* out) {
  scratch->resize(2 * p);
  uint32_t* key = scratch->data();
  uint32_t* cand = key + p;  // the keys still in the running, compacted after each pass
  int64_t count[256] = {0};
  for (int64_t i = 0; i < p; ++i) {
    key[i] = OrderedKey(x[i]);
    count[key[i] >> 24]++;
  }
  const uint32_t* in = key;
  int64_t n = p;
  uint32_t prefix = 0;
  int64_t rank = k;  // the rank-th highest of the n keys in the running
  for (int shift = 24;; shift -= 8) {
    int digit = 255;
    for (; digit > 0 && count[digit] < rank; --digit) rank -= count[digit];
    prefix |= static_cast<uint32_t>(digit) << shift;
    if (shift == 0) break;
    int64_t m = 0;
    for (int64_t i = 0; i < n; ++i) {  // branch-free: the keys are in no order
      cand[m] = in[i];
      m += ((in[i] >> shift) & 0xFF) == static_cast<uint32_t>(digit);
    }
    in = cand;
    n = m;
    std::fill(count, count + 256, 0);
    for (int64_t i = 0; i < n; ++i) count[(in[i] >> (shift - 8)) & 0xFF]++;
  }
  // Every key above the k-th is taken, and the first `rank` keys equal to it.
  TakeAboveAndFirstTies<uint32_t>(key, p, prefix, rank, k, out);
}

at::Tensor TopKSetsOnHost(const at::Tensor& importance, int64_t k) {
  const at::Tensor imp = importance.contiguous();
  const int64_t h = imp.size(0), p = imp.size(1);
  at::Tensor out = at::empty({h, k}, at::kLong);
  std::vector<uint32_t> scratch;
  for (int64_t r = 0; r < h; ++r)
    TopKRowFloat(imp.data_ptr<float>() + r * p, p, k, &scratch, out.data_ptr<int64_t>() + r * k);
  return out;
}

}  // namespace

at::Tensor TopKSets(const at::Tensor& importance, int64_t k) {
  IMPRESS_CHECK(k >= 1 && k <= importance.size(1));
  if (HostFloat(importance)) return TopKSetsOnHost(importance, k);
  // Other devices and dtypes: a stable descending sort keeps equal scores in index order.
  at::Tensor best = std::get<1>(importance.sort(/*stable=*/true, /*dim=*/1, /*descending=*/true)).narrow(1, 0, k);
  return std::get<0>(best.sort(1));
}

void SetsUnion(const at::Tensor& sets, int64_t p, at::Tensor* used, at::Tensor* mask) {
  const at::Tensor s = sets.to(at::kLong).cpu().contiguous();
  const int64_t h = s.size(0), k = s.size(1);
  at::Tensor m = at::zeros({h, p}, at::kBool);
  bool* mp = m.data_ptr<bool>();
  std::vector<uint8_t> any(p, 0);
  const int64_t* x = s.data_ptr<int64_t>();
  for (int64_t r = 0; r < h; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const int64_t i = x[r * k + j];
      IMPRESS_CHECK(i >= 0 && i < p);
      mp[r * p + i] = true;
      any[i] = 1;
    }
  std::vector<int64_t> u;
  for (int64_t i = 0; i < p; ++i)
    if (any[i]) u.push_back(i);
  *used = at::tensor(u, at::kLong);
  *mask = m;
}

namespace {

// |A ∩ B| / |A ∪ B| of two lists of distinct non-negative indices below
// table->size(): B's indices counted in a table marked with A's (left clear).
double JaccardByTable(const int64_t* a, int64_t na, const int64_t* b, int64_t nb, std::vector<uint8_t>* table) {
  uint8_t* in_a = table->data();
  for (int64_t j = 0; j < na; ++j) in_a[a[j]] = 1;
  int64_t inter = 0;
  for (int64_t j = 0; j < nb; ++j) inter += in_a[b[j]];
  for (int64_t j = 0; j < na; ++j) in_a[a[j]] = 0;
  const int64_t uni = na + nb - inter;
  return uni == 0 ? 1.0 : static_cast<double>(inter) / static_cast<double>(uni);
}

// One past the largest of `n` indices, each checked non-negative.
int64_t IndexBound(const int64_t* x, int64_t n) {
  int64_t bound = 0;
  for (int64_t j = 0; j < n; ++j) {
    IMPRESS_CHECK(x[j] >= 0);
    bound = std::max(bound, x[j] + 1);
  }
  return bound;
}

}  // namespace

double Jaccard(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.to(at::kCPU, at::kLong).contiguous(), y = b.to(at::kCPU, at::kLong).contiguous();
  const int64_t *xp = x.data_ptr<int64_t>(), *yp = y.data_ptr<int64_t>();
  std::vector<uint8_t> table(std::max(IndexBound(xp, x.numel()), IndexBound(yp, y.numel())), 0);
  return JaccardByTable(xp, x.numel(), yp, y.numel(), &table);
}

double MeanPairwiseJaccard(const at::Tensor& sets) {
  const int64_t h = sets.size(0);
  IMPRESS_CHECK(h >= 2);
  const at::Tensor s = sets.to(at::kCPU, at::kLong).contiguous();
  const int64_t k = s.size(1);
  const int64_t* x = s.data_ptr<int64_t>();
  std::vector<uint8_t> table(IndexBound(x, s.numel()), 0);
  double sum = 0;
  int pairs = 0;
  for (int64_t a = 0; a < h; ++a)
    for (int64_t b = a + 1; b < h; ++b, ++pairs) sum += JaccardByTable(x + a * k, k, x + b * k, k, &table);
  return sum / pairs;
}

double SimilarityThreshold(int64_t k, int64_t n, double alpha) {
  const double r = static_cast<double>(k) / n;
  return std::pow(r / (2 - r), alpha);
}

at::Tensor AgreedSet(const at::Tensor& sets, const at::Tensor& importance, int64_t k) {
  const int64_t p = importance.size(1);
  IMPRESS_CHECK(k >= 1 && k <= p);
  const std::vector<double> total = ColumnSums(importance);
  std::vector<double> key(p, 0.0);  // votes, then the sort key
  const at::Tensor s = sets.to(at::kCPU, at::kLong).contiguous();
  const int64_t* x = s.data_ptr<int64_t>();
  for (int64_t j = 0; j < s.numel(); ++j) {
    IMPRESS_CHECK(x[j] >= 0 && x[j] < p);
    key[x[j]] += 1.0;
  }
  // Sort key: votes first, then summed importance. Importance sums are below
  // the number of query rows, so scale votes past any possible sum.
  const double big = std::max(1.0, *std::max_element(total.begin(), total.end())) * 4 + 1;
  for (int64_t i = 0; i < p; ++i) key[i] = key[i] * big + total[i];
  // The k best by key, lower index first among equal keys: the k-th best key
  // found on a copy, then one ascending pass that keeps every key above it
  // and, of those equal to it, the lowest indices.
  std::vector<double> best(key);
  std::nth_element(best.begin(), best.begin() + (k - 1), best.end(), std::greater<double>());
  const double kth = best[k - 1];
  // Every key above the k-th is among the first k after the partition, so
  // the ties kept are those equal to it there.
  const int64_t ties = std::count(best.begin(), best.begin() + k, kth);
  at::Tensor kept = at::empty({k}, at::kLong);
  TakeAboveAndFirstTies(key.data(), p, kth, ties, k, kept.data_ptr<int64_t>());
  return kept.to(sets.device());
}

at::Tensor AgreedChunkTokens(const at::Tensor& importance, const at::Tensor& chunk_of, int64_t n_chunks, int64_t k) {
  IMPRESS_CHECK(chunk_of.numel() == importance.size(1) && n_chunks >= 1 && k >= 1 && k <= chunk_of.numel());
  const std::vector<double> total = ColumnSums(importance);
  const at::Tensor chunks = chunk_of.to(at::kCPU, at::kLong).contiguous();
  const double* tot = total.data();
  const int64_t* of = chunks.data_ptr<int64_t>();
  const int64_t p = chunks.numel();
  std::vector<double> score(n_chunks, 0.0);  // summed importance per chunk, positions in order
  std::vector<int64_t> start(n_chunks + 1, 0);
  for (int64_t i = 0; i < p; ++i) {
    IMPRESS_CHECK(of[i] >= 0 && of[i] < n_chunks);
    score[of[i]] += tot[i];
    start[of[i] + 1]++;
  }
  std::partial_sum(start.begin(), start.end(), start.begin());
  std::vector<int64_t> members(p);  // chunk c's positions, ascending, at members[start[c] .. start[c + 1])
  std::vector<int64_t> next(start.begin(), start.end() - 1);
  for (int64_t i = 0; i < p; ++i) members[next[of[i]]++] = i;
  std::vector<int64_t> order(n_chunks);  // best first; equal scores: lower chunk first
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a] > score[b]; });
  std::vector<uint8_t> take(p, 0);
  int64_t taken = 0;
  for (int64_t i = 0; i < n_chunks && taken < k; ++i) {
    int64_t* m = members.data() + start[order[i]];
    const int64_t size = start[order[i] + 1] - start[order[i]], room = k - taken;
    if (size > room)  // the chunk that completes k gives its best tokens (ties: lower position)
      std::stable_sort(m, m + size, [&](int64_t a, int64_t b) { return tot[a] > tot[b]; });
    for (int64_t j = 0; j < std::min(room, size); ++j) take[m[j]] = 1;
    taken += std::min(room, size);
  }
  at::Tensor kept = at::empty({k}, at::kLong);  // ascending
  int64_t* out = kept.data_ptr<int64_t>();
  for (int64_t i = 0, n = 0; i < p && n < k; ++i) {
    out[n] = i;
    n += take[i];
  }
  return kept;
}

ItfDecision DecideItf(const at::Tensor& probe_importance, int64_t k, double alpha, const at::Tensor& chunk_of,
                      int64_t n_chunks) {
  ItfDecision d;
  const int64_t n = probe_importance.size(1);
  at::Tensor sets = TopKSets(probe_importance, k);
  d.similarity = MeanPairwiseJaccard(sets);
  d.threshold = SimilarityThreshold(k, n, alpha);
  d.trusted = d.similarity > d.threshold;
  if (!d.trusted) return d;
  d.agreed = chunk_of.defined() ? AgreedChunkTokens(probe_importance, chunk_of, n_chunks, k)
                                : AgreedSet(sets, probe_importance, k);
  return d;
}

int64_t RetainedTokens(double retention, int64_t n) {
  int64_t k = static_cast<int64_t>(std::ceil(retention * n - 1e-9));
  return std::clamp<int64_t>(k, 1, n);
}

}  // namespace impress
