// Is LibTorch's fp32 score product (at::bmm, MKL here) for the probe step's
// shapes the plain chain acc = fma(q[d], k[d], acc), d = 0..63 from acc = 0?
// Counts, per shape, the products equal to that chain and to three other
// orders.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstdio>

int main() {
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (int rows : {16, 59, 177, 192}) {
      at::manual_seed(rows);
      const int64_t n = 2016, d = 64;
      const at::Tensor q = at::randn({rows, d}) * 0.125, k = at::randn({n, d}) * 3;
      const at::Tensor s = at::bmm(q.view({1, rows, d}), k.view({1, n, d}).transpose(1, 2)).view({rows, n});
      const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *sp = s.data_ptr<float>();
      long chain = 0, mul_add = 0, two = 0, reverse = 0;
      for (int r = 0; r < rows; ++r)
        for (int c = 0; c < n; ++c) {
          float a = 0, m = 0, a0 = 0, a1 = 0, rv = 0;
          for (int i = 0; i < d; ++i) {
            a = std::fma(qp[r * d + i], kp[c * d + i], a);
            m += qp[r * d + i] * kp[c * d + i];
          }
          for (int i = d - 1; i >= 0; --i) rv = std::fma(qp[r * d + i], kp[c * d + i], rv);
          for (int i = 0; i < d; i += 2) {
            a0 = std::fma(qp[r * d + i], kp[c * d + i], a0);
            a1 = std::fma(qp[r * d + i + 1], kp[c * d + i + 1], a1);
          }
          const float v = sp[r * n + c];
          chain += a == v, mul_add += m == v, two += a0 + a1 == v, reverse += rv == v;
        }
      std::printf("threads %d rows %d, %ld products: fma chain %ld, multiply then add %ld, two chains %ld, reversed %ld\n",
                  threads, rows, rows * n, chain, mul_add, two, reverse);
    }
  }
}
