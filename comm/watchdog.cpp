#include "comm/watchdog.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "core/check_mpi.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::comm {
namespace {

constexpr int kQueryTag = 1;
constexpr int kReplyTag = 2;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string RankList(const std::vector<int>& ranks) {
  std::string out = "[";
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i > 0) out += ' ';
    out += std::to_string(ranks[i]);
  }
  return out + "]";
}

// Open BusyScopes of this process.
std::atomic<int> g_busy{0};
// The stall inspector's threshold for every watchdog of the process; 0: off.
std::atomic<int64_t> g_stall_ns{0};

}  // namespace

BusyScope::BusyScope() { g_busy.fetch_add(1, std::memory_order_release); }

BusyScope::~BusyScope() { g_busy.fetch_sub(1, std::memory_order_release); }

bool BusyScope::busy() { return g_busy.load(std::memory_order_acquire) > 0; }

void Watchdog::SetStallSeconds(double seconds) {
  g_stall_ns.store(seconds > 0 ? static_cast<int64_t>(seconds * 1e9) : 0,
                   std::memory_order_relaxed);
}

Watchdog::Watchdog(MPI_Comm comm, const WatchdogOptions& options) : options_(options) {
  if (!(options_.timeout_seconds > 0)) {
    throw Error(ErrorCode::kInvalidArgument, "watchdog timeout must be > 0 seconds",
                {.key = "timeout_seconds"});
  }
  SF_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  SF_CHECK_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  SF_CHECK_MPI(MPI_Comm_rank(comm_.get(), &rank_));
  SF_CHECK_MPI(MPI_Comm_size(comm_.get(), &size_));
  int level = 0;
  SF_CHECK_MPI(MPI_Query_thread(&level));
  can_query_ = level == MPI_THREAD_MULTIPLE;
  thread_ = std::thread([this] { Run(); });
}

Watchdog::~Watchdog() {
  {
    MutexLock lock(mutex_);
    stop_ = true;
  }
  wake_.NotifyAll();
  thread_.join();
  // Queries sent to this rank in its last poll interval stay unanswered; drain them so the
  // communicator is freed with no pending messages addressed to it.
  if (can_query_) AnswerQueries();
  // comm_ is freed by its own destructor, after this.
}

uint64_t Watchdog::Begin(const char* op, size_t bytes) {
  op_.store(op, std::memory_order_relaxed);
  bytes_.store(bytes, std::memory_order_relaxed);
  started_ns_.store(NowNs(), std::memory_order_relaxed);
  // Release: a watchdog thread that sees the new count also sees op, bytes and start time.
  return entered_.fetch_add(1, std::memory_order_release) + 1;
}

void Watchdog::End() { completed_.fetch_add(1, std::memory_order_release); }

void Watchdog::AnswerQueries() {
  for (;;) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQueryTag, comm_.get(), &flag, &status) != MPI_SUCCESS ||
        !flag) {
      return;
    }
    int64_t asked = 0;
    MPI_Recv(&asked, 1, MPI_INT64_T, status.MPI_SOURCE, kQueryTag, comm_.get(), MPI_STATUS_IGNORE);
    const int64_t reply[3] = {static_cast<int64_t>(entered_.load(std::memory_order_acquire)),
                              static_cast<int64_t>(completed_.load(std::memory_order_acquire)),
                              BusyScope::busy() ? 1 : 0};
    // 24 bytes go eagerly: this returns without waiting for the asker.
    MPI_Send(reply, 3, MPI_INT64_T, status.MPI_SOURCE, kReplyTag, comm_.get());
  }
}

void Watchdog::Run() {
  const auto poll = std::chrono::duration<double>(options_.poll_seconds);
  const auto timeout_ns = static_cast<int64_t>(options_.timeout_seconds * 1e9);
  // A collective that waits on busy ranks is timed from when they last said so.
  uint64_t waited_for = 0;
  int64_t restarted_ns = 0;
  MutexLock lock(mutex_);
  while (!stop_) {
    wake_.WaitFor(mutex_, poll);  // a spurious wake-up just polls early
    if (stop_) break;
    if (can_query_) AnswerQueries();
    const uint64_t entered = entered_.load(std::memory_order_acquire);
    if (entered == completed_.load(std::memory_order_acquire)) continue;
    int64_t started = started_ns_.load(std::memory_order_relaxed);
    if (waited_for == entered) started = std::max(started, restarted_ns);
    const int64_t stall_ns = g_stall_ns.load(std::memory_order_relaxed);
    if (stall_ns > 0 && stall_ns < timeout_ns && entered != stall_reported_ &&
        NowNs() - started > stall_ns) {
      stall_reported_ = entered;
      ReportStall(entered, NowNs() - started);
    }
    if (NowNs() - started > timeout_ns && entered == entered_.load(std::memory_order_acquire) &&
        entered != completed_.load(std::memory_order_acquire)) {
      ReportTimeout(entered);  // returns only when the ranks it waits on are busy
      waited_for = entered;
      restarted_ns = NowNs();
    }
  }
}

std::vector<std::array<int64_t, 3>> Watchdog::Query(uint64_t collective, bool cancel_late) {
  std::vector<std::array<int64_t, 3>> answers(static_cast<size_t>(size_), {-1, -1, 0});
  if (can_query_ && size_ > 1) {
    const int64_t asked = static_cast<int64_t>(collective);
    std::vector<MPI_Request> queries;
    std::vector<MPI_Request> replies(static_cast<size_t>(size_), MPI_REQUEST_NULL);
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      MPI_Request q;
      if (MPI_Isend(&asked, 1, MPI_INT64_T, r, kQueryTag, comm_.get(), &q) == MPI_SUCCESS) {
        queries.push_back(q);
      }
      MPI_Irecv(answers[static_cast<size_t>(r)].data(), 3, MPI_INT64_T, r, kReplyTag, comm_.get(),
                &replies[static_cast<size_t>(r)]);
    }
    // Wait for answers, answering other ranks' queries meanwhile (they may be timing out too).
    const int64_t deadline = NowNs() + static_cast<int64_t>(options_.reply_seconds * 1e9);
    while (NowNs() < deadline) {
      AnswerQueries();
      int all_done = 0;
      MPI_Testall(static_cast<int>(replies.size()), replies.data(), &all_done, MPI_STATUSES_IGNORE);
      if (all_done) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // After a timeout, requests still pending are left alone: the job is about to end. After a
    // stall report the job goes on: a late answer's receive is cancelled (its answer counts as
    // none).
    if (cancel_late) {
      for (size_t r = 0; r < replies.size(); ++r) {
        if (replies[r] == MPI_REQUEST_NULL) continue;
        MPI_Cancel(&replies[r]);
        MPI_Wait(&replies[r], MPI_STATUS_IGNORE);
        answers[r] = {-1, -1, 0};
      }
      // A query is 8 bytes, sent eagerly: complete locally whether or not the peer took it.
      MPI_Waitall(static_cast<int>(queries.size()), queries.data(), MPI_STATUSES_IGNORE);
    }
  }
  return answers;
}

void Watchdog::ReportStall(uint64_t collective, int64_t running_ns) {
  const std::vector<std::array<int64_t, 3>> answers = Query(collective, /*cancel_late=*/true);
  std::vector<int> not_joined, busy, no_answer;
  for (int r = 0; r < size_; ++r) {
    const std::array<int64_t, 3>& a = answers[static_cast<size_t>(r)];
    if (r == rank_ || a[0] >= static_cast<int64_t>(collective)) continue;
    (a[0] < 0 ? no_answer : a[2] != 0 ? busy : not_joined).push_back(r);
  }
  if (not_joined.empty() && no_answer.empty() && !busy.empty()) return;  // a checkpoint, known
  // Only the lists that hold a rank; with none, every peer has joined and this rank waits on
  // the transfer itself.
  std::string who;
  const auto add = [&who](const char* what, const std::vector<int>& ranks) {
    if (!ranks.empty()) who += std::string("; ") + what + ": " + RankList(ranks);
  };
  add("ranks that had not joined it", not_joined);
  add("busy (checkpoint or evaluation)", busy);
  add("no answer", no_answer);
  if (who.empty()) who = "; every rank has joined it (the transfer itself is slow)";
  std::fprintf(stderr,
               "[rank %d] stall inspector: collective #%llu %s of %zu bytes has run %.2f s "
               "(the stall threshold is %.2f s, the watchdog ends the job at %.0f s)%s\n",
               rank_, static_cast<unsigned long long>(collective),
               op_.load(std::memory_order_relaxed), bytes_.load(std::memory_order_relaxed),
               static_cast<double>(running_ns) * 1e-9,
               static_cast<double>(g_stall_ns.load(std::memory_order_relaxed)) * 1e-9,
               options_.timeout_seconds, who.c_str());
}

void Watchdog::ReportTimeout(uint64_t collective) {
  std::vector<std::array<int64_t, 2>> progress(static_cast<size_t>(size_), {-1, -1});
  const std::vector<std::array<int64_t, 3>> answers = Query(collective, /*cancel_late=*/false);
  bool all_busy = can_query_ && size_ > 1;  // every rank not in #collective answered busy
  std::vector<int> busy_ranks;
  for (int r = 0; r < size_; ++r) {
    const std::array<int64_t, 3>& a = answers[static_cast<size_t>(r)];
    progress[static_cast<size_t>(r)] = {a[0], a[1]};
    if (r == rank_ || (a[0] >= static_cast<int64_t>(collective))) continue;
    if (a[0] < 0 || a[2] == 0) all_busy = false;
    busy_ranks.push_back(r);
  }
  if (all_busy && !busy_ranks.empty()) {
    if (collective != logged_busy_) {
      logged_busy_ = collective;
      std::fprintf(stderr,
                   "[rank %d] watchdog: collective #%llu %s waits past %.1f s on busy ranks %s "
                   "(a checkpoint or evaluation); waiting on\n",
                   rank_, static_cast<unsigned long long>(collective),
                   op_.load(std::memory_order_relaxed), options_.timeout_seconds,
                   RankList(busy_ranks).c_str());
    }
    return;
  }
  const std::string message = Describe(collective, op_.load(std::memory_order_relaxed),
                                       bytes_.load(std::memory_order_relaxed), size_, rank_,
                                       options_.timeout_seconds, progress);
  AbortJob(message.c_str(), ExitCodeFor(ErrorCode::kCommunication));
}

std::string Watchdog::Describe(uint64_t collective, const char* op, size_t bytes, int ranks,
                               int self, double timeout_seconds,
                               const std::vector<std::array<int64_t, 2>>& progress) {
  std::vector<int> not_joined;
  std::vector<int> waiting;
  std::vector<int> no_answer;
  const auto k = static_cast<int64_t>(collective);
  for (int r = 0; r < ranks; ++r) {
    if (r == self) {
      waiting.push_back(r);
    } else if (progress[static_cast<size_t>(r)][0] < 0) {
      no_answer.push_back(r);
    } else if (progress[static_cast<size_t>(r)][0] < k) {
      not_joined.push_back(r);
    } else {
      waiting.push_back(r);  // joined #k (or later); #k is not complete everywhere
    }
  }
  char head[256];
  std::snprintf(head, sizeof(head),
                "watchdog: collective #%llu %s of %zu bytes on %d ranks did not complete within "
                "%.1f s",
                static_cast<unsigned long long>(collective), op, bytes, ranks, timeout_seconds);
  std::string out = head;
  out += "; ranks that had not joined it: " + RankList(not_joined);
  out += "; joined and waiting: " + RankList(waiting);
  out += "; no answer (dead or stuck outside MPI): " + RankList(no_answer);
  return out;
}

}  // namespace shardflow::comm

namespace shardflow::comm {
namespace {

// A wait spins (polls back to back) this long before it starts napping: short transfers keep
// MPI's latency, long ones stop burning a core that a busy neighbour rank may need.
constexpr int64_t kSpinNs = 2'000'000;
constexpr auto kNap = std::chrono::microseconds(50);

// After a timeout: completes what has completed, cancels incomplete receives (a cancelled
// receive completes locally) and releases incomplete sends. Returns the index of the first
// request that was not complete (requests.size() when all were).
size_t AbandonRequests(std::vector<MPI_Request>& requests, const std::vector<PointToPoint>& ops,
                       size_t* pending) {
  size_t first = requests.size();
  *pending = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i] == MPI_REQUEST_NULL) continue;
    int done = 0;
    MPI_Request_get_status(requests[i], &done, MPI_STATUS_IGNORE);
    if (done) {
      MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
      continue;
    }
    ++*pending;
    if (first == requests.size()) first = i;
    if (ops[i].is_send) {
      MPI_Request_free(&requests[i]);
    } else {
      MPI_Cancel(&requests[i]);
      MPI_Wait(&requests[i], MPI_STATUS_IGNORE);
    }
  }
  return first;
}

}  // namespace

std::string DescribePointToPointTimeout(const PointToPoint& op, double timeout_seconds,
                                        double waited_seconds, int rank, size_t pending,
                                        size_t total) {
  char line[320];
  std::snprintf(line, sizeof(line),
                "watchdog: %s of %zu bytes %s rank %d (tag %d) did not complete within %.1f s "
                "(waited %.2f s on rank %d; %zu of %zu requests pending)",
                op.is_send ? "send" : "receive", op.bytes, op.is_send ? "to" : "from", op.peer,
                op.tag, timeout_seconds, waited_seconds, rank, pending, total);
  return line;
}

void WaitPointToPoint(std::vector<MPI_Request>& requests, const std::vector<PointToPoint>& ops,
                      double timeout_seconds, int rank) {
  const int64_t start = NowNs();
  const int64_t timeout_ns = static_cast<int64_t>(timeout_seconds * 1e9);
  const int n = static_cast<int>(requests.size());
  for (;;) {
    int done = 0;
    SF_CHECK_MPI(MPI_Testall(n, requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) return;
    const int64_t waited = NowNs() - start;
    if (waited >= timeout_ns) break;
    if (waited > kSpinNs) std::this_thread::sleep_for(kNap);
  }
  const double waited_seconds = static_cast<double>(NowNs() - start) * 1e-9;
  size_t pending = 0;
  const size_t first = AbandonRequests(requests, ops, &pending);
  const size_t total = requests.size();
  requests.clear();
  if (first == total) return;  // everything completed while the requests were examined
  throw Error(ErrorCode::kCommunication,
              DescribePointToPointTimeout(ops[first], timeout_seconds, waited_seconds, rank,
                                          pending, total),
              {.rank = rank});
}

}  // namespace shardflow::comm
