#include "kvstore/stack_chunks.h"

#include <ATen/ATen.h>

#include <cstring>
#include <type_traits>

#include "codec/kv_codec.h"
#include "common/status.h"

namespace impress {
namespace {

bool OnHostPath(const std::vector<at::Tensor>& parts, at::ScalarType type, int64_t heads) {
  if (type != at::kFloat) return false;
  const at::Tensor& a = parts[0];
  if (a.dim() != 3 || (a.scalar_type() != at::kHalf && a.scalar_type() != at::kFloat)) return false;
  for (const at::Tensor& p : parts)
    if (!p.is_cpu() || p.scalar_type() != a.scalar_type() || p.dim() != 3 || p.size(0) != a.size(0) ||
        p.size(1) < heads || p.size(2) != a.size(2) || p.stride(2) != 1)
      return false;
  return true;
}

// Row j of head h goes to out + (h * head_rows + j) * d.
template <class T>
void CopyRows(const std::vector<at::Tensor>& parts, const int64_t* rows, int64_t n, int64_t heads,
              int64_t head_rows, float* out) {
  const int64_t c = parts[0].size(0), d = parts[0].size(2);
  const int64_t total = c * static_cast<int64_t>(parts.size());
  std::vector<const T*> base;
  for (const at::Tensor& p : parts) base.push_back(static_cast<const T*>(p.data_ptr()));
  std::vector<int64_t> s0, s1;  // strides per part
  for (const at::Tensor& p : parts) s0.push_back(p.stride(0)), s1.push_back(p.stride(1));
  auto row_of = [&](int64_t j) {
    const int64_t r = rows != nullptr ? rows[j] : j;
    IMPRESS_CHECK(r >= 0 && r < total);
    return std::make_pair(r / c, base[r / c] + (r % c) * s0[r / c]);
  };
  // Rows of cached chunks are usually out of the CPU's caches and their
  // order is not one a hardware prefetcher follows: ask for rows ahead.
  constexpr int64_t kAhead = 8;
  const int64_t row_bytes = heads * d * static_cast<int64_t>(sizeof(T));
  for (int64_t j = 0; j < n; ++j) {
    if (j + kAhead < n) {
      const char* next = reinterpret_cast<const char*>(row_of(j + kAhead).second);
      for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(next + b);
    }
    const auto [part, row] = row_of(j);
    for (int64_t h = 0; h < heads; ++h) {
      float* dst = out + (h * head_rows + j) * d;
      const T* src = row + h * s1[part];
      if constexpr (std::is_same_v<T, float>) std::memcpy(dst, src, d * sizeof(float));
      else HalfToFloat(reinterpret_cast<const uint16_t*>(src), dst, d);
    }
  }
}

}  // namespace

at::Tensor StackChunkRows(const std::vector<at::Tensor>& parts, const at::Tensor& rows, at::ScalarType type,
                          int64_t heads, int64_t room) {
  IMPRESS_CHECK(!parts.empty() && heads >= 0 && room >= 0);
  if (heads == 0) heads = parts[0].size(1);
  for (const at::Tensor& p : parts) IMPRESS_CHECK(p.dim() == 3 && p.size(1) >= heads);
  if (OnHostPath(parts, type, heads)) {
    const at::Tensor r = rows.defined() ? rows.to(at::kLong).cpu().contiguous() : at::Tensor();
    const int64_t n = r.defined() ? r.numel() : parts[0].size(0) * static_cast<int64_t>(parts.size());
    at::Tensor out = at::empty({heads, n + room, parts[0].size(2)}, at::kFloat);
    const int64_t* rp = r.defined() ? r.data_ptr<int64_t>() : nullptr;
    if (parts[0].scalar_type() == at::kHalf) CopyRows<at::Half>(parts, rp, n, heads, n + room, out.data_ptr<float>());
    else CopyRows<float>(parts, rp, n, heads, n + room, out.data_ptr<float>());
    return out.narrow(1, 0, n);
  }
  std::vector<at::Tensor> some;
  for (const at::Tensor& p : parts) some.push_back(heads < p.size(1) ? p.narrow(1, 0, heads) : p);
  at::Tensor stacked = some.size() == 1 ? some[0] : at::cat(some, 0);  // [n*C, heads, d], token-major
  if (rows.defined()) stacked = stacked.index_select(0, rows.to(stacked.device()));
  // Head-major in `type` in one pass: the cast and the transpose together.
  at::Tensor out = at::empty({stacked.size(1), stacked.size(0) + room, stacked.size(2)}, stacked.options().dtype(type))
                       .narrow(1, 0, stacked.size(0));
  out.copy_(stacked.transpose(0, 1));
  return out;
}

}  // namespace impress
