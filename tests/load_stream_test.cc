// The device timeline's arithmetic (kvstore/load_stream.h), which the CUDA
// run's copy_hidden_share is made of: the load stream's busy spans against
// the layers' compute intervals, on intervals written out by hand.
#include <gtest/gtest.h>

#include "kvstore/load_stream.h"

namespace impress {
namespace {

DeviceLayerTimes Layer(std::vector<std::pair<double, double>> busy, double compute_begin, double compute_end) {
  DeviceLayerTimes t;
  t.load_busy = std::move(busy);
  t.compute_begin = compute_begin;
  t.compute_end = compute_end;
  return t;
}

TEST(DeviceTimeline, HiddenLoadIsBusyTimeOverlappingAnyLayersCompute) {
  // Layer 0 computes over [0, 10), layer 1 over [10, 20), layer 2 over [25, 30).
  // Layer 1's read: busy over [2, 4) (hidden) and [8, 12) (hidden: it crosses
  // into layer 1's own compute); layer 2's: [18, 24), of which [18, 20) is hidden
  // and [20, 24), with no layer computing, is not.
  const std::vector<DeviceLayerTimes> layers = {
      Layer({}, 0, 10), Layer({{2, 4}, {8, 12}}, 10, 20), Layer({{18, 24}}, 25, 30)};
  double busy = 0;
  EXPECT_DOUBLE_EQ(HiddenLoadMs(layers, &busy), 2 + 4 + 2);
  EXPECT_DOUBLE_EQ(busy, 2 + 4 + 6);
}

TEST(DeviceTimeline, IdleTimeBetweenSpansIsNotLoadTime) {
  // A read that copies at [1, 2), then waits on the disk, then copies at [30, 31):
  // two busy milliseconds, one of them under compute.
  const std::vector<DeviceLayerTimes> layers = {Layer({{1, 2}, {30, 31}}, 0, 5)};
  double busy = 0;
  EXPECT_DOUBLE_EQ(HiddenLoadMs(layers, &busy), 1);
  EXPECT_DOUBLE_EQ(busy, 2);
  EXPECT_DOUBLE_EQ(HiddenLoadMs({}, &busy), 0);
  EXPECT_DOUBLE_EQ(busy, 0);
}

TEST(DeviceTimeline, ReadsAfterSelectionAreLoadTimeNotCompute) {
  // Layer 0 computes over [0, 10) but spends [6, 9) reading its chosen values
  // on the compute stream; layer 1's read-ahead is busy over [4, 10).
  DeviceLayerTimes l0 = Layer({}, 0, 10), l1 = Layer({{4, 10}}, 10, 20);
  l0.demand_busy = {{6, 9}};
  double busy = 0;
  EXPECT_DOUBLE_EQ(HiddenLoadMs({l0, l1}, &busy), (6 - 4) + (10 - 9));
  EXPECT_DOUBLE_EQ(busy, 6 + 3);
}

}  // namespace
}  // namespace impress
