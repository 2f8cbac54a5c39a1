// Every all-reduce algorithm against a double-precision reference, on awkward sizes, with random
// data seeded per rank; in-place semantics, average, 16-bit wire formats, int-sized splitting
// (with an artificially small limit), emulated multi-node topology, broadcast, int64 agreement.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "comm/allreduce.hpp"
#include "comm/allreduce_shm.hpp"
#include "comm/collectives.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

constexpr size_t kCounts[] = {0, 1, 7, 1000, (size_t{1} << 20) + 3};

int WorldSize() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}
int WorldRank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// Rank r's input: uniform in [-1, 1), seeded by (rank, count).
std::vector<float> RankData(int rank, size_t count) {
  std::mt19937 rng(static_cast<uint32_t>(1234 + 7919 * rank) ^ static_cast<uint32_t>(count));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (auto& x : v) x = dist(rng);
  return v;
}

// The naive twin: every rank's data summed in double.
std::vector<double> Reference(int ranks, size_t count) {
  std::vector<double> sum(count, 0.0);
  for (int r = 0; r < ranks; ++r) {
    const auto v = RankData(r, count);
    for (size_t i = 0; i < count; ++i) sum[i] += v[i];
  }
  return sum;
}

uint64_t Fnv1a(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// True on every rank when all ranks hold the same bytes.
bool SameOnAllRanks(const float* data, size_t count) {
  const uint64_t h = Fnv1a(data, count * sizeof(float));
  uint64_t lo = 0, hi = 0;
  MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

struct Case {
  AllreduceAlgorithm algorithm;
  WireFormat wire = WireFormat::kFloat32;
  ReduceMode mode = ReduceMode::kSum;
};

std::string Name(const Case& c, size_t count) {
  return std::string(AlgorithmName(c.algorithm)) + "/" + WireFormatName(c.wire) +
         (c.mode == ReduceMode::kAverage ? "/avg" : "/sum") + " count=" + std::to_string(count);
}

double Tolerance(WireFormat wire, int ranks) {
  switch (wire) {
    case WireFormat::kFloat32:
      return 1e-5 * ranks;
    case WireFormat::kBFloat16:
      return 2e-2 * ranks;  // 8-bit mantissa, one rounding per hop of partial sums up to n
    case WireFormat::kFloat16:
      return 2e-3 * ranks;
  }
  return 0;
}

// Runs one case on a slice in the middle of a larger buffer (guards on both sides must stay
// untouched: the algorithms work on exactly [data, data + count)).
void CheckCase(Communicator& comm, const Case& c, size_t count) {
  SCOPED_TRACE(Name(c, count));
  const int n = comm.size();
  const auto input = RankData(comm.rank(), count);
  constexpr size_t kGuard = 16;
  constexpr float kGuardValue = 12345.0f;
  std::vector<float> buffer(count + 2 * kGuard, kGuardValue);
  std::copy(input.begin(), input.end(), buffer.begin() + kGuard);
  float* data = buffer.data() + kGuard;

  Allreduce(comm, count == 0 ? nullptr : data, count,
            {.algorithm = c.algorithm, .mode = c.mode, .wire = c.wire, .segment_bytes = 4096});

  const auto ref = Reference(n, count);
  const double scale = c.mode == ReduceMode::kAverage ? 1.0 / n : 1.0;
  const double tol = Tolerance(c.wire, n);
  size_t bad = 0;
  for (size_t i = 0; i < count; ++i) {
    if (!(std::fabs(data[i] - ref[i] * scale) <= tol)) {
      if (bad++ < 3)
        ADD_FAILURE() << "element " << i << ": got " << data[i] << ", want " << ref[i] * scale;
    }
  }
  EXPECT_EQ(bad, 0u);
  for (size_t i = 0; i < kGuard; ++i) {
    ASSERT_EQ(buffer[i], kGuardValue) << "guard before the slice overwritten at " << i;
    ASSERT_EQ(buffer[kGuard + count + i], kGuardValue) << "guard after the slice overwritten";
  }
  EXPECT_TRUE(SameOnAllRanks(data, count)) << "ranks disagree on the result bits";
}

void SweepAll(Communicator& comm, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    for (size_t count : kCounts) CheckCase(comm, c, count);
  }
}

const std::vector<Case> kFloatCases = {
    {AllreduceAlgorithm::kRing},         {AllreduceAlgorithm::kRecursiveDoubling},
    {AllreduceAlgorithm::kHierarchical}, {AllreduceAlgorithm::kMpi},
    {AllreduceAlgorithm::kShm},          {AllreduceAlgorithm::kAuto},
};

TEST(AllreduceTest, EveryAlgorithmMatchesTheReference) {
  Communicator comm(MPI_COMM_WORLD);
  SweepAll(comm, kFloatCases);
}

TEST(AllreduceTest, AverageDividesByTheRankCount) {
  Communicator comm(MPI_COMM_WORLD);
  for (auto a : {AllreduceAlgorithm::kRing, AllreduceAlgorithm::kRecursiveDoubling,
                 AllreduceAlgorithm::kHierarchical, AllreduceAlgorithm::kMpi,
                 AllreduceAlgorithm::kShm, AllreduceAlgorithm::kAuto}) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}}) {
      CheckCase(comm, {a, WireFormat::kFloat32, ReduceMode::kAverage}, count);
    }
  }
}

TEST(AllreduceTest, SixteenBitWireFormatsWithinLooserTolerance) {
  Communicator comm(MPI_COMM_WORLD, {.emulated_ranks_per_node = 2});
  SweepAll(comm, {{AllreduceAlgorithm::kRing, WireFormat::kBFloat16},
                  {AllreduceAlgorithm::kRing, WireFormat::kFloat16},
                  {AllreduceAlgorithm::kHierarchical, WireFormat::kBFloat16},
                  {AllreduceAlgorithm::kHierarchical, WireFormat::kFloat16}});
}

TEST(AllreduceTest, EmulatedNodesOfTwoRanks) {
  // At 4 ranks: two "nodes" of two; the hierarchical leader ring and auto's topology rule run.
  Communicator comm(MPI_COMM_WORLD, {.emulated_ranks_per_node = 2});
  const int n = comm.size();
  EXPECT_EQ(comm.local_size(), std::min(2, n - 2 * (comm.rank() / 2)));
  EXPECT_EQ(comm.num_nodes(), (n + 1) / 2);
  EXPECT_EQ(comm.leaders() != nullptr, comm.local_rank() == 0);
  SweepAll(comm, kFloatCases);
}

TEST(AllreduceTest, MessagesSplitIntoSmallPiecesStillMatch) {
  // A limit of 100 elements per MPI call: every path that splits counts runs many pieces.
  Communicator comm(MPI_COMM_WORLD, {.emulated_ranks_per_node = 2, .max_message_count = 100});
  for (const Case& c : kFloatCases) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1000}, size_t{100003}}) {
      CheckCase(comm, c, count);
    }
  }
  // Segments larger than the limit as well.
  std::vector<float> v = RankData(comm.rank(), 50000);
  Allreduce(comm, v.data(), v.size(),
            {.algorithm = AllreduceAlgorithm::kRing, .segment_bytes = 1 << 20});
  const auto ref = Reference(comm.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(v[i], ref[i], 1e-5 * comm.size()) << i;
}

TEST(AllreduceTest, SegmentSizesFromOneElementUp) {
  Communicator comm(MPI_COMM_WORLD);
  for (size_t segment_bytes : {size_t{4}, size_t{12}, size_t{4096}, size_t{1} << 22}) {
    std::vector<float> v = RankData(comm.rank(), 999);
    Allreduce(comm, v.data(), v.size(),
              {.algorithm = AllreduceAlgorithm::kRing, .segment_bytes = segment_bytes});
    const auto ref = Reference(comm.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_NEAR(v[i], ref[i], 1e-5 * comm.size()) << "segment_bytes=" << segment_bytes;
    }
  }
}

TEST(AllreduceTest, ShmSlotSizesFromOneCacheLineUp) {
  // Slots of 64 bytes turn 100003 elements into thousands of rounds: the double-buffered slots
  // and the round counters are reused many times within one call.
  Communicator comm(MPI_COMM_WORLD);
  for (size_t slot_bytes : {size_t{1}, size_t{64}, size_t{4096}, size_t{1} << 20}) {
    for (size_t count : {size_t{1}, size_t{999}, size_t{100003}}) {
      SCOPED_TRACE("slot_bytes=" + std::to_string(slot_bytes) + " count=" + std::to_string(count));
      std::vector<float> v = RankData(comm.rank(), count);
      Allreduce(comm, v.data(), v.size(),
                {.algorithm = AllreduceAlgorithm::kShm, .segment_bytes = slot_bytes});
      const auto ref = Reference(comm.size(), v.size());
      for (size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(v[i], ref[i], 1e-5 * comm.size()) << i;
      EXPECT_TRUE(SameOnAllRanks(v.data(), v.size()));
    }
  }
}

TEST(AllreduceTest, ShmBackToBackCallsOfChangingSizes) {
  // One rank may run a round ahead of the others; consecutive calls of different sizes must
  // never read a slot a peer is still filling or overwrite one a peer is still reading.
  Communicator comm(MPI_COMM_WORLD);
  std::mt19937 rng(99);  // same sequence of sizes on every rank
  for (int call = 0; call < 200; ++call) {
    const size_t count = std::uniform_int_distribution<size_t>(0, 3000)(rng);
    std::vector<float> v = RankData(comm.rank(), count);
    Allreduce(comm, v.data(), v.size(),
              {.algorithm = AllreduceAlgorithm::kShm, .segment_bytes = 1024});
    const auto ref = Reference(comm.size(), v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      ASSERT_NEAR(v[i], ref[i], 1e-5 * comm.size()) << "call " << call << " element " << i;
    }
  }
}

TEST(AllreduceTest, ShmOnTwoCommunicatorsFromTwoThreads) {
  // The trainer's layout: gradients on one communicator from the communication thread, control
  // values on another from the main thread, at the same time. Each has its own window.
  Communicator grads(MPI_COMM_WORLD);
  Communicator control(MPI_COMM_WORLD);
  std::vector<float> a = RankData(grads.rank(), 50001);
  std::vector<float> b = RankData(grads.rank(), 77);
  std::thread worker([&] {
    for (int i = 0; i < 20; ++i) {
      std::vector<float> x = a;
      Allreduce(grads, x.data(), x.size(), {.algorithm = AllreduceAlgorithm::kShm});
      if (i == 19) a = x;
    }
  });
  for (int i = 0; i < 20; ++i) {
    std::vector<float> y = b;
    Allreduce(control, y.data(), y.size(), {.algorithm = AllreduceAlgorithm::kShm});
    if (i == 19) b = y;
  }
  worker.join();
  const auto ref_a = Reference(grads.size(), a.size());
  const auto ref_b = Reference(grads.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], ref_a[i], 1e-5 * grads.size());
  for (size_t i = 0; i < b.size(); ++i) ASSERT_NEAR(b[i], ref_b[i], 1e-5 * grads.size());
}

TEST(AllreduceSharedTest, RegionsReducedInPlaceOverManySteps) {
  // A gradient arena in shared memory: regions (buckets) of awkward sizes reduced in order,
  // rewritten between steps; guards between regions stay untouched.
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::vector<std::pair<size_t, size_t>> regions = {
      {0, 0}, {0, 1}, {2, 7}, {10, 1000}, {1011, (size_t{1} << 18) + 3}};
  const size_t total = regions.back().first + regions.back().second + 1;
  SharedFloatBuffer buffer(comm, total);
  float* data = buffer.data();
  for (int step = 0; step < 4; ++step) {
    const auto mode = step % 2 ? ReduceMode::kAverage : ReduceMode::kSum;
    const auto input = RankData(comm.rank() + 10 * step, total);
    std::copy(input.begin(), input.end(), data);
    for (const auto& [offset, count] : regions) AllreduceShared(buffer, offset, count, mode);
    std::vector<double> ref(total, 0.0);
    for (int r = 0; r < n; ++r) {
      const auto v = RankData(r + 10 * step, total);
      for (size_t i = 0; i < total; ++i) ref[i] += v[i];
    }
    for (size_t i = 0; i < total; ++i) {
      const bool reduced = std::any_of(regions.begin(), regions.end(), [&](const auto& reg) {
        return i >= reg.first && i < reg.first + reg.second;
      });
      const double want = reduced ? ref[i] / (mode == ReduceMode::kAverage ? n : 1) : input[i];
      ASSERT_NEAR(data[i], want, 1e-5 * n) << "step " << step << " element " << i;
    }
    for (const auto& [offset, count] : regions) {
      EXPECT_TRUE(SameOnAllRanks(data + offset, count)) << "region at " << offset;
    }
  }
  EXPECT_THROW(AllreduceShared(buffer, total - 1, 2), Error);
  EXPECT_THROW(AllreduceShared(buffer, total + 1, 0), Error);
}

TEST(AllreduceTest, RunsFromACommunicationThread) {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> v = RankData(comm.rank(), 4099);
  std::thread worker(
      [&] { Allreduce(comm, v.data(), v.size(), {.algorithm = AllreduceAlgorithm::kRing}); });
  worker.join();
  const auto ref = Reference(comm.size(), v.size());
  for (size_t i = 0; i < v.size(); ++i) ASSERT_NEAR(v[i], ref[i], 1e-5 * comm.size());
}

TEST(AllreduceTest, AutoChoosesTheSameAlgorithmOnEveryRank) {
  Communicator comm(MPI_COMM_WORLD, {.emulated_ranks_per_node = 2});
  for (size_t bytes : {size_t{0}, size_t{4}, size_t{8192}, size_t{1} << 20, size_t{1} << 26}) {
    const int choice = static_cast<int>(ChooseAlgorithm(comm, bytes));
    EXPECT_NE(choice, static_cast<int>(AllreduceAlgorithm::kAuto));
    int lo = 0, hi = 0;
    MPI_Allreduce(&choice, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&choice, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo, hi) << "bytes=" << bytes;
  }
}

// Several nodes of several block-placed ranks (2 emulated nodes of 2 at 4 ranks): MPI up to
// 8 KiB, hierarchical to 64 KiB, then MPI below nodes x 128 KiB and the flat ring above
// (comm/allreduce.cpp, from the simulation of 8 nodes x 8 ranks).
TEST(AllreduceTest, AutoOnSeveralRanksPerNode) {
  Communicator comm(MPI_COMM_WORLD, {.emulated_ranks_per_node = 2});
  EXPECT_TRUE(comm.nodes_contiguous());
  if (comm.num_nodes() < 2 || comm.max_local_size() < 2) GTEST_SKIP() << "needs 2 nodes of 2";
  const std::pair<size_t, AllreduceAlgorithm> want[] = {
      {size_t{4} << 10, AllreduceAlgorithm::kMpi},
      {size_t{16} << 10, AllreduceAlgorithm::kHierarchical},
      {size_t{64} << 10, AllreduceAlgorithm::kHierarchical},
      {size_t{128} << 10, AllreduceAlgorithm::kMpi},
      {size_t{512} << 10, AllreduceAlgorithm::kRing}};
  for (const auto& [bytes, algorithm] : want) {
    EXPECT_EQ(static_cast<int>(ChooseAlgorithm(comm, bytes)), static_cast<int>(algorithm))
        << "bytes=" << bytes;
  }
}

TEST(AllreduceTest, NullBufferWithCountIsRejected) {
  Communicator comm(MPI_COMM_WORLD);
  EXPECT_THROW(Allreduce(comm, nullptr, 3), Error);
}

TEST(CommunicatorTest, TopologyAndSplit) {
  Communicator comm(MPI_COMM_WORLD);
  EXPECT_EQ(comm.size(), WorldSize());
  EXPECT_EQ(comm.rank(), WorldRank());
  EXPECT_EQ(comm.num_nodes(), 1);  // all test ranks run on one machine
  EXPECT_EQ(comm.local_size(), comm.size());
  EXPECT_EQ(comm.local_rank(), comm.rank());
  auto half = comm.Split(comm.rank() % 2, comm.rank(), {.discover_topology = false});
  ASSERT_NE(half, nullptr);
  EXPECT_EQ(half->size(), (comm.size() + 1 - comm.rank() % 2) / 2);
  EXPECT_EQ(half->rank(), comm.rank() / 2);
  auto none = comm.Split(MPI_UNDEFINED, 0, {});
  EXPECT_EQ(none, nullptr);
}

TEST(CollectivesTest, BroadcastFromRootZeroAndOthers) {
  Communicator comm(MPI_COMM_WORLD, {.max_message_count = 64});
  for (int root = 0; root < comm.size(); ++root) {
    std::vector<float> v = RankData(comm.rank(), 1001);
    Broadcast(comm, v.data(), v.size(), root);
    EXPECT_EQ(v, RankData(root, 1001)) << "root " << root;
  }
  float x = 1;
  EXPECT_THROW(Broadcast(comm, &x, 1, comm.size()), Error);
}

TEST(CollectivesTest, Int64MinSumMax) {
  Communicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const int64_t mine = (int64_t{1} << 40) + 10 * comm.rank();
  EXPECT_EQ(AllreduceInt64(comm, mine, Int64Op::kMin), int64_t{1} << 40);
  EXPECT_EQ(AllreduceInt64(comm, mine, Int64Op::kMax), (int64_t{1} << 40) + 10 * (n - 1));
  EXPECT_EQ(AllreduceInt64(comm, mine, Int64Op::kSum),
            n * (int64_t{1} << 40) + 10 * int64_t{n} * (n - 1) / 2);
}

TEST(WatchdogTest, CountsCollectives) {
  Communicator comm(MPI_COMM_WORLD, {.watchdog = WatchdogOptions{.timeout_seconds = 60}});
  ASSERT_NE(comm.watchdog(), nullptr);
  const uint64_t before = comm.watchdog()->entered();
  float x = 1;
  Allreduce(comm, &x, 1);
  AllreduceInt64(comm, int64_t{1}, Int64Op::kMin);
  EXPECT_EQ(comm.watchdog()->entered(), before + 2);
  EXPECT_EQ(comm.watchdog()->completed(), before + 2);
}

}  // namespace
}  // namespace shardflow::comm
