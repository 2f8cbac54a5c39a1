// The collectives of comm/collectives.hpp beyond all-reduce of floats, on awkward sizes (0 bytes,
// 1, lengths that differ per rank, some ranks sending nothing), every root, and with an
// artificially small message limit so size_t lengths are split into several int-sized pieces;
// and the point-to-point watchdog: a peer that never sends makes the waiting rank fail with one
// line naming the operation, the peer and the seconds waited, within the timeout.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "comm/collectives.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

// Small enough that a few hundred bytes travel as many pieces.
constexpr size_t kTinyLimit = 3;

// Rank r's blob for case `c`: its length, then its bytes (a function of rank and position).
size_t BlobLength(int c, int rank) {
  switch (c) {
    case 0:
      return 0;  // nobody sends anything
    case 1:
      return 1;
    case 2:
      return rank % 2 == 0 ? 0 : 1;  // some ranks send nothing
    default:
      return static_cast<size_t>(rank) * 37 + 5;  // uneven, none a multiple of the limit
  }
}
uint8_t BlobByte(int rank, size_t i) { return static_cast<uint8_t>(rank * 31 + i * 7 + 1); }
std::vector<uint8_t> Blob(int c, int rank) {
  std::vector<uint8_t> b(BlobLength(c, rank));
  for (size_t i = 0; i < b.size(); ++i) b[i] = BlobByte(rank, i);
  return b;
}

CommunicatorOptions WithLimit(size_t limit) {
  CommunicatorOptions o;
  o.max_message_count = limit;
  return o;
}

TEST(GatherBytesTest, EveryRankBlobOnEveryRootAtAwkwardSizes) {
  for (size_t limit : {kMpiMaxCount, kTinyLimit}) {
    Communicator comm(Group::kWorld, WithLimit(limit));
    for (int c = 0; c < 4; ++c) {
      for (int root = 0; root < comm.size(); ++root) {
        const std::vector<uint8_t> mine = Blob(c, comm.rank());
        const auto all = GatherBytes(comm, mine.data(), mine.size(), root);
        if (comm.rank() != root) {
          EXPECT_TRUE(all.empty());
          continue;
        }
        ASSERT_EQ(all.size(), static_cast<size_t>(comm.size()));
        for (int r = 0; r < comm.size(); ++r) {
          EXPECT_EQ(all[static_cast<size_t>(r)], Blob(c, r))
              << "case " << c << " root " << root << " rank " << r << " limit " << limit;
        }
      }
    }
  }
}

TEST(GatherConcatTest, RowsOfEveryRankInRankOrder) {
  Communicator comm(Group::kWorld, WithLimit(kTinyLimit));
  // Rank r holds r + 1 rows of width 3 (rank 0 one row), values encode (rank, position).
  std::vector<int64_t> mine(static_cast<size_t>(comm.rank() + 1) * 3);
  for (size_t i = 0; i < mine.size(); ++i) mine[i] = comm.rank() * 1000 + static_cast<int64_t>(i);
  const std::vector<int64_t> all = GatherConcat(comm, mine.data(), mine.size());
  if (comm.rank() != 0) {
    EXPECT_TRUE(all.empty());
    return;
  }
  std::vector<int64_t> want;
  for (int r = 0; r < comm.size(); ++r) {
    for (int64_t i = 0; i < (r + 1) * 3; ++i) want.push_back(r * 1000 + i);
  }
  EXPECT_EQ(all, want);
}

TEST(GatherConcatTest, NothingAnywhere) {
  Communicator comm(Group::kWorld);
  EXPECT_TRUE(GatherConcat(comm, static_cast<const float*>(nullptr), 0).empty());
}

TEST(GatherBytesTest, BadRootIsRefused) {
  Communicator comm(Group::kWorld);
  const uint8_t x = 1;
  EXPECT_THROW(GatherBytes(comm, &x, 1, comm.size()), Error);
  EXPECT_THROW(GatherBytes(comm, &x, 1, -1), Error);
}

TEST(AllreduceDoublesTest, SumMinMaxInPiecesAndZeroCount) {
  for (size_t limit : {kMpiMaxCount, kTinyLimit}) {
    Communicator comm(Group::kWorld, WithLimit(limit));
    const int n = comm.size();
    const double r = comm.rank();
    std::vector<double> sum(7), lo(7), hi(7);
    for (size_t i = 0; i < 7; ++i) sum[i] = lo[i] = hi[i] = r * 0.5 + static_cast<double>(i);
    AllreduceDoubles(comm, sum.data(), sum.size(), ReduceOp::kSum);
    AllreduceDoubles(comm, lo.data(), lo.size(), ReduceOp::kMin);
    AllreduceDoubles(comm, hi.data(), hi.size(), ReduceOp::kMax);
    for (size_t i = 0; i < 7; ++i) {
      EXPECT_DOUBLE_EQ(sum[i], 0.25 * n * (n - 1) + static_cast<double>(n * i));
      EXPECT_DOUBLE_EQ(lo[i], static_cast<double>(i));
      EXPECT_DOUBLE_EQ(hi[i], (n - 1) * 0.5 + static_cast<double>(i));
    }
    AllreduceDoubles(comm, nullptr, 0, ReduceOp::kSum);  // a collective with nothing in it
    EXPECT_DOUBLE_EQ(AllreduceDouble(comm, r, ReduceOp::kMax), n - 1);
    EXPECT_DOUBLE_EQ(AllreduceDouble(comm, r + 1, ReduceOp::kMin), 1.0);
    // The earlier name still works.
    EXPECT_EQ(AllreduceInt64(comm, int64_t{2}, Int64Op::kSum), 2 * n);
  }
}

TEST(AllgatherInt64Test, EveryRankValueInRankOrder) {
  Communicator comm(Group::kWorld);
  const std::vector<int64_t> all = AllgatherInt64(comm, (int64_t{1} << 40) + comm.rank());
  ASSERT_EQ(all.size(), static_cast<size_t>(comm.size()));
  for (int r = 0; r < comm.size(); ++r) EXPECT_EQ(all[r], (int64_t{1} << 40) + r);
}

TEST(BroadcastTest, DoublesBytesAndStringsFromEveryRoot) {
  Communicator comm(Group::kWorld, WithLimit(kTinyLimit));
  for (int root = 0; root < comm.size(); ++root) {
    std::vector<double> d(5, comm.rank() == root ? 2.5 + root : -1.0);
    Broadcast(comm, d.data(), d.size(), root);
    for (double x : d) EXPECT_DOUBLE_EQ(x, 2.5 + root);
    std::vector<uint8_t> b(11, comm.rank() == root ? static_cast<uint8_t>(root + 1) : 0);
    BroadcastBytes(comm, b.data(), b.size(), root);
    for (uint8_t x : b) EXPECT_EQ(x, root + 1);
    BroadcastBytes(comm, nullptr, 0, root);
    for (const std::string& text : {std::string(), std::string("a"), std::string(100, 'z')}) {
      std::string got = comm.rank() == root ? text : std::string("stale");
      BroadcastString(comm, &got, root);
      EXPECT_EQ(got, text);
    }
  }
  double x = 0;
  EXPECT_THROW(Broadcast(comm, &x, 1, comm.size()), Error);
}

TEST(BarrierTest, NobodyLeavesBeforeTheLastArrives) {
  Communicator comm(Group::kWorld);
  // The last rank arrives 0.2 s late; everyone else must wait for it.
  const auto start = std::chrono::steady_clock::now();
  if (comm.rank() == comm.size() - 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Barrier(comm);
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.19);
  Barrier(comm);
}

// A communicator whose watchdog gives up on a point-to-point wait after `seconds`.
CommunicatorOptions ShortWatchdog(double seconds) {
  CommunicatorOptions o;
  o.discover_topology = false;
  o.watchdog = WatchdogOptions{.timeout_seconds = seconds};
  return o;
}

constexpr int kTag = 7;

TEST(PointToPointWatchdogTest, AReceiveFromAPeerThatNeverSendsFailsWithinTheTimeout) {
  // The other ranks wait on `control` (default timeout) while rank 0 waits on `comm`: a
  // collective of `comm` would itself time out after 0.5 s.
  Communicator control(Group::kWorld);
  Communicator comm(Group::kWorld, ShortWatchdog(0.5));
  const int peer = (comm.rank() + 1) % comm.size();  // itself at one rank
  if (comm.rank() == 0) {
    int64_t value = 0;
    RequestList requests;
    comm.PostRecv(&value, 1, MPI_INT64_T, sizeof(value), peer, kTag, requests);
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.WaitAll(requests);
      ADD_FAILURE() << "the wait for a message never sent returned";
    } catch (const Error& e) {
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_GE(waited, 0.5);
      EXPECT_LT(waited, 5.0);
      EXPECT_EQ(e.code(), ErrorCode::kCommunication);
      const std::string what = e.what();
      EXPECT_NE(what.find("watchdog: receive of 8 bytes from rank " + std::to_string(peer) +
                          " (tag 7) did not complete within 0.5 s (waited 0."),
                std::string::npos)
          << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
    EXPECT_TRUE(requests.empty());
  }
  Barrier(control);  // the other ranks never sent, and are still fine to talk to
  EXPECT_EQ(AllreduceInt64(comm, int64_t{1}, ReduceOp::kSum), comm.size());
}

TEST(PointToPointWatchdogTest, ASendRecvWhosePeerOnlyReceivesFailsNamingThePeer) {
  Communicator control(Group::kWorld);
  Communicator comm(Group::kWorld, ShortWatchdog(0.5));
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  int64_t out = 42, in = 0;
  if (comm.rank() == 0) {
    try {
      comm.SendRecv(&out, 1, 1, &in, 1, 1, MPI_INT64_T, sizeof(int64_t), kTag);
      ADD_FAILURE() << "SendRecv returned without the peer's message";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("watchdog: receive of 8 bytes from rank 1 (tag 7)"),
                std::string::npos)
          << e.what();
    }
  } else if (comm.rank() == 1) {
    RequestList requests;
    comm.PostRecv(&in, 1, MPI_INT64_T, sizeof(int64_t), 0, kTag, requests);
    comm.WaitAll(requests);  // rank 0's half arrives
    EXPECT_EQ(in, 42);
  }
  Barrier(control);
}

TEST(PointToPointWatchdogTest, ALateButLivePeerIsWaitedFor) {
  Communicator comm(Group::kWorld, ShortWatchdog(5.0));
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  // Rank 1 sends 0.3 s late, in pieces (a length above the int limit would look the same).
  std::vector<uint8_t> data(1000);
  RequestList requests;
  if (comm.rank() == 0) {
    comm.PostRecv(data.data(), data.size(), MPI_BYTE, 1, 1, kTag, requests);
    comm.WaitAll(requests);
    for (size_t i = 0; i < data.size(); ++i) ASSERT_EQ(data[i], static_cast<uint8_t>(i)) << i;
  } else if (comm.rank() == 1) {
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    comm.PostSend(data.data(), data.size(), MPI_BYTE, 1, 0, kTag, requests);
    comm.WaitAll(requests);
  }
  Barrier(comm);
}

TEST(PointToPointWatchdogTest, TheReportIsOneLine) {
  const std::string line = DescribePointToPointTimeout(
      {.is_send = true, .peer = 3, .tag = 5, .bytes = 4096}, 2.0, 2.04, 1, 2, 4);
  EXPECT_EQ(line,
            "watchdog: send of 4096 bytes to rank 3 (tag 5) did not complete within 2.0 s "
            "(waited 2.04 s on rank 1; 2 of 4 requests pending)");
}

}  // namespace
}  // namespace shardflow::comm
