// The probe step (3 probe heads on one KV head, T = 59 new tokens, P = 1957
// prefix keys) two ways, on the same inputs:
//   current: at::bmm over all rows, mask, at::_softmax_out, at::sum over rows
//            (what select/importance.cc runs);
//   fused:   per block of 16 rows of one head (the groups of ATen's cascade
//            sum), an AVX-512 product (the fma chain over d, as
//            product_is_fma_chain shows MKL computes it) into a buffer that
//            stays in L2, the mask, at::_softmax_out on the block, and the
//            block's rows added in order; the blocks folded as ATen's cascade
//            folds 16-row groups. Blocks spread over the threads.
// Prints how many importance values are bit-equal, then microseconds per
// call with the caches warm and evicted (64 MB written before each call),
// and the fused step's parts on one thread.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

namespace {

constexpr int64_t G = 3, T = 59, P = 1957, D = 64, N = P + T;

std::vector<char> junk(64 << 20);
void Evict() {
  for (size_t i = 0; i < junk.size(); i += 64) junk[i] = static_cast<char>(junk[i] + 1);
}
double Micros(const std::function<void()>& f, bool cold, int n = 200) {
  double total = 0;
  for (int i = 0; i < n; ++i) {
    if (cold) Evict();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    total += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  return total / n;
}

// Row i (of a head's T) sees every prefix column and new columns j <= i.
void Mask(float* s, int64_t first_row, int64_t rows, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) std::fill(s + r * ld + P + first_row + r + 1, s + r * ld + N, -INFINITY);
}

at::Tensor Current(const at::Tensor& q, const at::Tensor& k) {
  at::Tensor s = at::bmm(q.view({1, G * T, D}), k.view({1, N, D}).transpose(1, 2)).view({1, G, T, N});
  for (int64_t h = 0; h < G; ++h) Mask(s.data_ptr<float>() + h * T * N, 0, T, N);
  at::_softmax_out(s, s, -1, false);
  return s.slice(3, 0, P).sum(2).reshape({G, P});
}

// Keys as panels of 16 keys, d-major: [N / 16][D][16], zero past N.
void Pack(const float* k, float* panels) {
  const int64_t np = (N + 15) / 16;
  at::parallel_for(0, np, 8, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t c = 0; c < 16; ++c)
        for (int64_t i = 0; i < D; ++i) panels[(p * D + i) * 16 + c] = p * 16 + c < N ? k[(p * 16 + c) * D + i] : 0.f;
  });
}

// R rows by up to 3 panels (48 keys): R x 3 accumulators, d in order.
template <int R>
void Tile(const float* q, const float* panels, int64_t p, int npan, float* s, int64_t lds) {
  __m512 acc[R][3];
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < 3; ++j) acc[r][j] = _mm512_setzero_ps();
  const float* b = panels + p * D * 16;
  for (int i = 0; i < D; ++i) {
    const __m512 b0 = _mm512_loadu_ps(b + i * 16);
    const __m512 b1 = npan > 1 ? _mm512_loadu_ps(b + (D + i) * 16) : b0;
    const __m512 b2 = npan > 2 ? _mm512_loadu_ps(b + (2 * D + i) * 16) : b0;
    for (int r = 0; r < R; ++r) {
      const __m512 a = _mm512_set1_ps(q[r * D + i]);
      acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(a, b2, acc[r][2]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < npan; ++j) _mm512_storeu_ps(s + r * lds + (p + j) * 16, acc[r][j]);
}

template <int R>
void TileRows(const float* q, const float* panels, int64_t np, float* s, int64_t lds) {
  for (int64_t p = 0; p < np; p += 3) Tile<R>(q, panels, p, static_cast<int>(std::min<int64_t>(3, np - p)), s, lds);
}

void Scores(const float* q, int64_t rows, const float* panels, float* s, int64_t lds) {
  const int64_t np = (N + 15) / 16;
  int64_t r = 0;
  for (; r + 8 <= rows; r += 8) TileRows<8>(q + r * D, panels, np, s + r * lds, lds);
  const float* qr = q + r * D;
  float* sr = s + r * lds;
  switch (rows - r) {
    case 1: TileRows<1>(qr, panels, np, sr, lds); break;
    case 2: TileRows<2>(qr, panels, np, sr, lds); break;
    case 3: TileRows<3>(qr, panels, np, sr, lds); break;
    case 4: TileRows<4>(qr, panels, np, sr, lds); break;
    case 5: TileRows<5>(qr, panels, np, sr, lds); break;
    case 6: TileRows<6>(qr, panels, np, sr, lds); break;
    case 7: TileRows<7>(qr, panels, np, sr, lds); break;
  }
}

constexpr int64_t kGroups = (T + 15) / 16, kLds = (N + 15) / 16 * 16;

// One 16-row group: scores, mask, softmax, the rows added in order into `sum`.
void Group(const float* q, const float* panels, int64_t h, int64_t g, float* buf, float* sum) {
  const int64_t r0 = g * 16, rows = std::min<int64_t>(16, T - r0);
  Scores(q + (h * T + r0) * D, rows, panels, buf, kLds);
  Mask(buf, r0, rows, kLds);
  at::Tensor v = at::from_blob(buf, {rows, N}, {kLds, 1});
  at::_softmax_out(v, v, -1, false);
  std::memcpy(sum, buf, P * sizeof(float));
  for (int64_t r = 1; r < rows; ++r)
    for (int64_t j = 0; j < P; ++j) sum[j] += buf[r * kLds + j];
}

at::Tensor Fused(const at::Tensor& q, const at::Tensor& k) {
  std::vector<float> panels((N + 15) / 16 * D * 16), sums(G * kGroups * P);
  Pack(k.data_ptr<float>(), panels.data());
  at::parallel_for(0, G * kGroups, 1, [&](int64_t b0, int64_t b1) {
    std::vector<float> buf(16 * kLds);
    for (int64_t b = b0; b < b1; ++b)
      Group(q.data_ptr<float>(), panels.data(), b / kGroups, b % kGroups, buf.data(), sums.data() + b * P);
  });
  // ATen's cascade for T < 256: the full groups added in order, then the last, short group plus that.
  at::Tensor out = at::zeros({G, P});
  const int64_t full = T / 16;
  for (int64_t h = 0; h < G; ++h) {
    float* o = out.data_ptr<float>() + h * P;
    for (int64_t g = 0; g < full; ++g)
      for (int64_t j = 0; j < P; ++j) o[j] += sums[(h * kGroups + g) * P + j];
    if (T % 16 != 0)
      for (int64_t j = 0; j < P; ++j) o[j] = sums[(h * kGroups + full) * P + j] + o[j];
  }
  return out;
}

}  // namespace

int main() {
  at::manual_seed(1);
  const at::Tensor q = at::randn({G * T, D}) * 0.125, k = at::randn({N, D}) * 3;
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    const at::Tensor a = Current(q, k), b = Fused(q, k);
    std::printf("threads %d: %ld of %ld importance values bit-equal, largest relative difference %g\n", threads,
                at::eq(a, b).sum().item<int64_t>(), a.numel(), ((a - b).abs() / a.abs()).max().item<float>());
    for (bool cold : {false, true})
      std::printf("threads %d, caches %s: current %.0f us, fused %.0f us\n", threads, cold ? "evicted" : "warm",
                  Micros([&] { Current(q, k); }, cold), Micros([&] { Fused(q, k); }, cold));
  }
  at::set_num_threads(1);
  std::vector<float> panels((N + 15) / 16 * D * 16), buf(16 * kLds), sum(P);
  Pack(k.data_ptr<float>(), panels.data());
  std::printf("one thread, warm: pack %.0f us; product of all %ld rows %.0f us (%.0f GFLOP/s); at::bmm %.0f us\n",
              Micros([&] { Pack(k.data_ptr<float>(), panels.data()); }, false), G * T,
              Micros([&] { for (int64_t b = 0; b < G * kGroups; ++b) Scores(q.data_ptr<float>() + ((b / kGroups) * T + (b % kGroups) * 16) * D, std::min<int64_t>(16, T - (b % kGroups) * 16), panels.data(), buf.data(), kLds); }, false),
              2.0 * G * T * N * D / Micros([&] { for (int64_t b = 0; b < G * kGroups; ++b) Scores(q.data_ptr<float>() + ((b / kGroups) * T + (b % kGroups) * 16) * D, std::min<int64_t>(16, T - (b % kGroups) * 16), panels.data(), buf.data(), kLds); }, false) * 1e-3,
              Micros([&] { at::bmm(q.view({1, G * T, D}), k.view({1, N, D}).transpose(1, 2)); }, false));
}
