// StackChunkRows against ATen's formula: concatenate, index, transpose, cast.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "kvstore/stack_chunks.h"

namespace impress {
namespace {

at::Tensor Reference(const std::vector<at::Tensor>& parts, const at::Tensor& rows, at::ScalarType type) {
  at::Tensor all = at::cat(parts, 0);
  if (rows.defined()) all = all.index_select(0, rows);
  return all.transpose(0, 1).to(type).contiguous();
}

TEST(StackChunks, EveryPathGivesTheIndexedRowsHeadMajor) {
  at::manual_seed(3);
  const int64_t c = 4, heads = 3, d = 8;
  for (auto stored : {at::kHalf, at::kFloat, at::kBFloat16}) {
    std::vector<at::Tensor> parts;
    for (int i = 0; i < 3; ++i) parts.push_back(at::randn({c, heads, d}).to(stored));
    // A probe-key view: the first KV head of a wider chunk (not contiguous).
    parts.push_back(at::randn({c, heads + 2, d}).to(stored).narrow(1, 0, heads));
    const at::Tensor rows = at::randperm(4 * c, at::kLong).narrow(0, 0, 9);
    for (auto type : {at::kFloat, at::kHalf}) {
      for (const at::Tensor& r : {rows, at::Tensor()}) {
        const at::Tensor got = StackChunkRows(parts, r, type);
        EXPECT_EQ(got.scalar_type(), type);
        EXPECT_TRUE(got.equal(Reference(parts, r, type))) << "stored " << stored << " into " << type;
      }
    }
  }
}

TEST(StackChunks, RoomLeavesRowsAfterEachHead) {
  at::manual_seed(4);
  const int64_t c = 4, heads = 3, d = 8, room = 5;
  for (auto stored : {at::kHalf, at::kBFloat16}) {  // the host path and ATen's
    std::vector<at::Tensor> parts;
    for (int i = 0; i < 3; ++i) parts.push_back(at::randn({c, heads, d}).to(stored));
    const at::Tensor rows = at::randperm(3 * c, at::kLong).narrow(0, 0, 7);
    for (const at::Tensor& r : {rows, at::Tensor()}) {
      const at::Tensor got = StackChunkRows(parts, r, at::kFloat, 2, room);
      const int64_t n = r.defined() ? r.numel() : 3 * c;
      EXPECT_EQ(got.sizes(), (at::IntArrayRef{2, n, d}));
      EXPECT_EQ(got.strides(), (at::IntArrayRef{(n + room) * d, d, 1}));
      EXPECT_GE(got.storage().nbytes(), static_cast<size_t>(2 * (n + room) * d * sizeof(float)));
      EXPECT_TRUE(got.equal(Reference(parts, r, at::kFloat).narrow(0, 0, 2))) << stored;
    }
  }
}

TEST(StackChunks, OneChunkAndRepeatedRows) {
  const at::Tensor part = at::randn({4, 2, 8}).to(at::kHalf);
  const at::Tensor rows = at::tensor({3, 3, 0}, at::kLong);
  EXPECT_TRUE(StackChunkRows({part}, rows, at::kFloat).equal(Reference({part}, rows, at::kFloat)));
}

}  // namespace
}  // namespace impress
