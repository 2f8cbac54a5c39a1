#include "comm/gradient_reducer.hpp"

#include "core/error.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <random>
#include <vector>

namespace shardflow::comm {
namespace {

// Gradients of rank r: element i is f(r, i); the average over ranks is computed in double.
float Value(int rank, int64_t i) { return static_cast<float>((rank + 1) * 0.25 + (i % 97) * 0.01); }

class GradientReducerTest : public ::testing::TestWithParam<bool> {};

TEST_P(GradientReducerTest, AveragesEveryBucketWhateverTheReadyOrder) {
  const bool overlap = GetParam();
  Communicator comm(MPI_COMM_WORLD);
  const int size = comm.size();
  // Awkward bucket sizes: empty, one element, not divisible by the rank count, large.
  std::vector<GradientSlice> slices = {{0, 0}, {0, 1}, {1, 7}, {8, 1000}, {1008, (1 << 16) + 3}};
  const int64_t n = slices.back().offset + slices.back().size;
  std::vector<float> grads(n + 2, -7.0f);  // guard values at the end
  for (int step = 0; step < 3; ++step) {
    for (int64_t i = 0; i < n; ++i) grads[i] = Value(comm.rank(), i + step);
    GradientReducer reducer(comm, grads.data(), slices, {.overlap = overlap});
    // Backprop order: the front of the arena first, as GradReadyTracker fires; bucket 2 is
    // never reported (Finish must still reduce it).
    for (int b : {0, 1, 3, 4}) reducer.BucketReady(b);
    EXPECT_GE(reducer.Finish(), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int r = 0; r < size; ++r) sum += Value(r, i + step);
      ASSERT_NEAR(grads[i], sum / size, 1e-5) << "element " << i << " step " << step;
    }
    EXPECT_EQ(grads[n], -7.0f);
    EXPECT_EQ(reducer.stats().steps, 1);
    EXPECT_EQ(reducer.stats().bytes, n * 4);
  }
}

TEST_P(GradientReducerTest, ReusedAcrossSteps) {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> grads(100);
  GradientReducer reducer(comm, grads.data(), {{0, 60}, {60, 40}}, {.overlap = GetParam()});
  for (int step = 0; step < 5; ++step) {
    for (int i = 0; i < 100; ++i) grads[i] = static_cast<float>(comm.rank() + step);
    reducer.BucketReady(0);
    reducer.BucketReady(1);
    reducer.Finish();
    const float want = static_cast<float>(step) + (comm.size() - 1) / 2.0f;
    for (int i = 0; i < 100; ++i) ASSERT_FLOAT_EQ(grads[i], want);
  }
  EXPECT_EQ(reducer.stats().steps, 5);
  EXPECT_THROW(reducer.BucketReady(2), ::shardflow::Error);
  reducer.BucketReady(1);
  EXPECT_THROW(reducer.BucketReady(1), ::shardflow::Error);
  reducer.Finish();
}

INSTANTIATE_TEST_SUITE_P(Overlap, GradientReducerTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "on" : "off"; });

}  // namespace
}  // namespace shardflow::comm
