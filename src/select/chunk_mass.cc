#include "select/chunk_mass.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <limits>

#include "select/importance.h"

namespace impress {
namespace {

// Sums each row of `x` [R, P] (fp32, contiguous, host) over each chunk's
// positions into `out` [R, C] (zeroed), one pass over each run of positions
// of one chunk: what index_add_ along P gives, in the same order of adds.
void ChunkSumsHost(const at::Tensor& x, const at::Tensor& chunk_of, const at::Tensor& out) {
  const int64_t r = x.size(0), p = x.size(1), c = out.size(1);
  const ChunkRuns runs = RunsOf(chunk_of);
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, r, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t row = r0; row < r1; ++row) {
      const float* xr = in + row * p;
      float* orow = o + row * c;
      for (size_t j = 0; j + 1 < runs.start.size(); ++j) {
        float s = orow[runs.chunk[j]];
        for (int64_t i = runs.start[j]; i < runs.start[j + 1]; ++i) s += xr[i];
        orow[runs.chunk[j]] = s;
      }
    }
  });
}

}  // namespace

ChunkRuns RunsOf(const at::Tensor& chunk_of) {
  const at::Tensor of = chunk_of.to(at::kCPU, at::kLong).contiguous();
  const int64_t* o = of.data_ptr<int64_t>();
  ChunkRuns runs;
  for (int64_t i = 0; i < of.numel(); ++i)
    if (i == 0 || o[i] != o[i - 1]) runs.start.push_back(i), runs.chunk.push_back(o[i]);
  runs.start.push_back(of.numel());
  return runs;
}

at::Tensor NewKeyScores(const at::Tensor& qf, const at::Tensor& new_k, int64_t g, int64_t w, int64_t first_row) {
  const int64_t hkv = qf.size(0), t = new_k.size(1);
  at::Tensor sn = at::bmm(qf, new_k.to(at::kFloat).transpose(1, 2)).view({hkv, g, w, t});
  auto opts = at::TensorOptions().device(qf.device()).dtype(at::kLong);
  const at::Tensor future = at::arange(t, opts).unsqueeze(0) > (at::arange(w, opts) + first_row).unsqueeze(1);
  sn.masked_fill_(future, -std::numeric_limits<float>::infinity());
  return sn.view({hkv, g * w, t});
}

at::Tensor SoftmaxChunkMass(at::Tensor sp, at::Tensor sn, const at::Tensor& chunk_of, int64_t n_chunks,
                            int64_t pool) {
  const int64_t hkv = sp.size(0), r = sp.size(1), p = sp.size(2);
  const at::Tensor m = at::maximum(sp.amax(-1, true), sn.amax(-1, true));
  sp.sub_(m).exp_();
  const at::Tensor den = sp.sum(-1, true) + sn.sub_(m).exp_().sum(-1, true);  // [Hkv, R, 1]
  if (pool > 1) sp = at::max_pool1d(sp, {pool}, {1}, {pool / 2});
  at::Tensor mass = at::zeros({hkv, r, n_chunks}, sp.options());
  if (HostFloat(sp) && sp.is_contiguous()) {
    ChunkSumsHost(sp.view({hkv * r, p}), chunk_of, mass.view({hkv * r, n_chunks}));
  } else {
    mass.index_add_(2, chunk_of.to(sp.device(), at::kLong), sp);
  }
  return mass.div_(den);
}

}  // namespace impress
