#include "comm/gradient_reducer.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "comm/allreduce_shm.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

// Gradients of rank r: element i is f(r, i); the average over ranks is computed in double.
float Value(int rank, int64_t i) { return static_cast<float>((rank + 1) * 0.25 + (i % 97) * 0.01); }

// Parameters: overlap on/off; gradients in plain memory or in shared memory (reduced in place).
class GradientReducerTest : public ::testing::TestWithParam<std::tuple<bool, bool>> {
 protected:
  bool overlap() const { return std::get<0>(GetParam()); }
  bool shared() const { return std::get<1>(GetParam()); }
  // A zero-filled gradient array of n floats, of the kind the parameter asks for.
  float* MakeGrads(Communicator& comm, size_t n) {
    if (shared()) {
      shared_ = std::make_unique<SharedFloatBuffer>(comm, n);
      return shared_->data();
    }
    plain_.assign(n, 0.0f);
    return plain_.data();
  }
  ReducerOptions Options() const { return {.overlap = overlap(), .shared = shared_.get()}; }

 private:
  std::vector<float> plain_;
  std::unique_ptr<SharedFloatBuffer> shared_;
};

TEST_P(GradientReducerTest, AveragesEveryBucketWhateverTheReadyOrder) {
  Communicator comm(MPI_COMM_WORLD);
  const int size = comm.size();
  // Awkward bucket sizes: empty, one element, not divisible by the rank count, large.
  std::vector<GradientSlice> slices = {{0, 0}, {0, 1}, {1, 7}, {8, 1000}, {1008, (1 << 16) + 3}};
  const int64_t n = slices.back().offset + slices.back().size;
  float* grads = MakeGrads(comm, static_cast<size_t>(n) + 2);
  grads[n] = grads[n + 1] = -7.0f;  // guard values at the end
  for (int step = 0; step < 3; ++step) {
    for (int64_t i = 0; i < n; ++i) grads[i] = Value(comm.rank(), i + step);
    GradientReducer reducer(comm, grads, slices, Options());
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
  float* grads = MakeGrads(comm, 100);
  GradientReducer reducer(comm, grads, {{0, 60}, {60, 40}}, Options());
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

TEST(GradientReducerSharedTest, RefusesABufferThatIsNotTheGradients) {
  Communicator comm(MPI_COMM_WORLD);
  SharedFloatBuffer shared(comm, 10);
  std::vector<float> other(10);
  EXPECT_THROW(GradientReducer(comm, other.data(), {{0, 10}}, {.shared = &shared}),
               ::shardflow::Error);
}

INSTANTIATE_TEST_SUITE_P(OverlapAndMemory, GradientReducerTest,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "overlap_on"
                                                                      : "overlap_off") +
                                  (std::get<1>(info.param) ? "_shared" : "_plain");
                         });

}  // namespace
}  // namespace shardflow::comm
