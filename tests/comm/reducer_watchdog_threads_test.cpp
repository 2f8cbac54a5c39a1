// The threads of GradientReducer (training thread + communication thread) and Watchdog
// (collective thread + polling thread) in one process, without mpiexec: MPI runs as a
// singleton (one rank), which OpenMPI starts on its own. One rank makes every all-reduce local,
// so these tests are about the hand-offs between threads, not the arithmetic over ranks (the
// *_mpi_test binaries cover that). They are the reducer and watchdog tests that
// scripts/tsan_tests.sh runs under ThreadSanitizer.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/gradient_reducer.hpp"
#include "comm/watchdog.hpp"
#include "core/error.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SF_TEST_HAS_LSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SF_TEST_HAS_LSAN 1
#endif
#ifdef SF_TEST_HAS_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace shardflow::comm {
namespace reducer_watchdog_threads_test {

// OpenMPI's singleton start-up and shutdown keep blocks LeakSanitizer reports (from plug-ins it
// has unloaded by then, so no suppression by library name matches them): LeakSanitizer looks
// away while MPI starts and stops, and only then.
class LeakCheckPaused {
 public:
  LeakCheckPaused() {
#ifdef SF_TEST_HAS_LSAN
    __lsan_disable();
#endif
  }
  ~LeakCheckPaused() {
#ifdef SF_TEST_HAS_LSAN
    __lsan_enable();
#endif
  }
};

// MPI is started by the first test that needs it (other tests of this binary never pay for
// it) and finalized once after all tests.
class MpiSingleton : public ::testing::Environment {
 public:
  static void Start() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;
    int provided = 0;
    {
      LeakCheckPaused paused;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    }
    ASSERT_EQ(provided, MPI_THREAD_MULTIPLE) << "the watchdog's queries need THREAD_MULTIPLE";
  }
  void TearDown() override {
    int initialized = 0;
    int finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
      LeakCheckPaused paused;
      MPI_Finalize();
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kMpi =
    ::testing::AddGlobalTestEnvironment(new MpiSingleton);

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

float Value(int64_t i, int step) { return static_cast<float>((i % 89) * 0.5 + step); }

TEST(GradientReducerThreads, OverlappedStepsReduceEveryBucketOnce) {
  MpiSingleton::Start();
  Communicator comm(MPI_COMM_WORLD, {.watchdog = WatchdogOptions{.poll_seconds = 0.001}});
  // Many small buckets so the training thread and the communication thread hand off often.
  std::vector<GradientSlice> slices;
  int64_t n = 0;
  for (int b = 0; b < 64; ++b) {
    const int64_t size = 1 + (b * 37) % 300;
    slices.push_back({n, size});
    n += size;
  }
  std::vector<float> grads(static_cast<size_t>(n) + 1);
  grads[static_cast<size_t>(n)] = -7.0f;  // guard
  GradientReducer reducer(comm, grads.data(), slices, {.overlap = true});
  const int kSteps = 40;
  for (int step = 0; step < kSteps; ++step) {
    for (int64_t i = 0; i < n; ++i) grads[static_cast<size_t>(i)] = Value(i, step);
    // Backprop order (last bucket first); every fifth bucket is left for Finish.
    for (int b = 63; b >= 0; --b) {
      if (b % 5 != 0) reducer.BucketReady(b);
    }
    EXPECT_GE(reducer.Finish(), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(grads[static_cast<size_t>(i)], Value(i, step)) << "element " << i;
    }
  }
  EXPECT_EQ(grads[static_cast<size_t>(n)], -7.0f);
  EXPECT_EQ(reducer.stats().steps, kSteps);
  EXPECT_EQ(reducer.stats().bytes, kSteps * n * static_cast<int64_t>(sizeof(float)));
  EXPECT_GE(reducer.stats().reduce_seconds, 0.0);
  ASSERT_NE(comm.watchdog(), nullptr);
  // One all-reduce per bucket per step went through the communicator's watchdog.
  EXPECT_EQ(comm.watchdog()->entered(), comm.watchdog()->completed());
  EXPECT_GE(comm.watchdog()->completed(), static_cast<uint64_t>(kSteps) * slices.size());
}

TEST(GradientReducerThreads, DestroyedMidStepDrainsAndJoins) {
  MpiSingleton::Start();
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> grads(4096, 1.0f);
  std::vector<GradientSlice> slices = {{0, 1024}, {1024, 1024}, {2048, 2048}};
  for (int round = 0; round < 20; ++round) {
    GradientReducer reducer(comm, grads.data(), slices, {.overlap = true});
    reducer.BucketReady(2);
    reducer.BucketReady(0);
    // No Finish: the destructor stops the communication thread with buckets queued.
  }
  for (float g : grads) ASSERT_EQ(g, 1.0f);
}

TEST(GradientReducerThreads, RepeatedBucketThrowsOnTheCallingThread) {
  MpiSingleton::Start();
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> grads(16, 2.0f);
  GradientReducer reducer(comm, grads.data(), {{0, 8}, {8, 8}}, {.overlap = true});
  reducer.BucketReady(1);
  EXPECT_THROW(reducer.BucketReady(1), Error);
  EXPECT_THROW(reducer.BucketReady(2), Error);
  EXPECT_GE(reducer.Finish(), 0.0);
  reducer.BucketReady(1);  // a new step
  EXPECT_GE(reducer.Finish(), 0.0);
  EXPECT_EQ(reducer.stats().steps, 2);
}

TEST(WatchdogThreads, CountsCollectivesWhileItsThreadPolls) {
  MpiSingleton::Start();
  Watchdog watchdog(MPI_COMM_WORLD, {.timeout_seconds = 60, .poll_seconds = 0.0005});
  for (uint64_t k = 1; k <= 5000; ++k) {
    ASSERT_EQ(watchdog.Begin("allreduce(test)", k), k);
    if (k % 1000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    watchdog.End();
  }
  EXPECT_EQ(watchdog.entered(), 5000u);
  EXPECT_EQ(watchdog.completed(), 5000u);
}

TEST(WatchdogThreads, DestructionWakesTheThreadInsteadOfWaitingOutThePoll) {
  MpiSingleton::Start();
  // A poll interval far longer than the bound below: the destructor must wake the thread.
  auto watchdog = std::make_unique<Watchdog>(
      MPI_COMM_WORLD, WatchdogOptions{.timeout_seconds = 60, .poll_seconds = 30});
  watchdog->Begin("barrier(test)", 0);
  watchdog->End();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the thread is waiting now
  const auto start = std::chrono::steady_clock::now();
  watchdog.reset();
  EXPECT_LT(SecondsSince(start), 5.0);
}

}  // namespace reducer_watchdog_threads_test
}  // namespace shardflow::comm
