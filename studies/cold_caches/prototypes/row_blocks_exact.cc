// What a row-blocked probe step can reproduce bit for bit, for T query rows
// of 3 heads over P = 1957 prefix columns (+ T new ones):
//   - at::_softmax_out on blocks of 16 rows against one call on all rows;
//   - ATen's float column sum over the T rows against the same 16-row
//     cascade as a fused step would fold it (groups of 16 added in order,
//     folded as ATen's multi_row_sum does for T < 256): how many columns agree.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdio>
#include <vector>

int main() {
  for (int threads : {1, 2}) {
    at::set_num_threads(threads);
    for (int64_t t : {5, 16, 17, 33, 59, 64, 100, 255}) {
      const int64_t p = 1957, n = p + t;
      at::manual_seed(t);
      const at::Tensor s = at::rand({1, 3, t, n});
      const at::Tensor all = at::_softmax(s, -1, false);
      at::Tensor blocks = s.clone();
      for (int64_t h = 0; h < 3; ++h)
        for (int64_t r = 0; r < t; r += 16) {
          at::Tensor v = blocks.select(1, h).narrow(1, r, std::min<int64_t>(16, t - r));
          at::_softmax_out(v, v, -1, false);
        }
      const at::Tensor ref = all.slice(3, 0, p).sum(2).reshape({3, p});
      at::Tensor mine = at::zeros({3, p});
      const float* x = all.data_ptr<float>();
      for (int64_t h = 0; h < 3; ++h) {
        float* o = mine.data_ptr<float>() + h * p;
        std::vector<float> group(p);
        const int64_t full = t / 16;
        for (int64_t g = 0; g <= full; ++g) {
          const int64_t r0 = g * 16, rows = std::min<int64_t>(16, t - r0);
          if (rows == 0) break;
          std::fill(group.begin(), group.end(), 0.f);
          for (int64_t r = r0; r < r0 + rows; ++r)
            for (int64_t j = 0; j < p; ++j) group[j] += x[(h * t + r) * n + j];
          for (int64_t j = 0; j < p; ++j) o[j] = g < full ? o[j] + group[j] : group[j] + o[j];
        }
      }
      const at::Tensor same = at::eq(ref, mine).all(0);
      int64_t first_off = -1;
      for (int64_t j = 0; j < p && first_off < 0; ++j)
        if (!same[j].item<bool>()) first_off = j;
      std::printf("threads %d T %3ld: softmax by 16-row blocks bit-equal %s; cascade columns equal %ld of %ld, first other %ld\n",
                  threads, t, at::equal(all, blocks) ? "yes" : "no", same.sum().item<int64_t>(), p, first_off);
    }
  }
}
