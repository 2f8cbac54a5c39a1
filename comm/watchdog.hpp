// Watchdog: turns a hung collective or point-to-point wait into a clear error instead of a
// silent hang.
//
// Collectives:
// Every collective a Communicator runs is bracketed by Begin(op, bytes) / End(). The fast path
// is two relaxed atomic stores and a clock read per collective; no message is sent. A background
// thread wakes every `poll_seconds` and
//   - answers status queries from other ranks' watchdogs (on a private dup of the communicator),
//   - if the current collective #k has been running longer than `timeout_seconds`, asks every
//     other rank's watchdog how far it got (collectives entered and completed), waits up to
//     `reply_seconds` for answers, and ends the job through AbortJob with one line such as
//       watchdog: collective #12 allreduce(ring) of 4000012 bytes on 4 ranks did not complete
//       within 3.0 s; ranks that had not joined it: [3]; joined and waiting: [0 1]; no answer
//       (dead or stuck outside MPI progress): [2]
// A rank that never answers has died or cannot reach MPI; a rank whose count of entered
// collectives is below k had not joined #k. Collectives are numbered per communicator; all
// ranks call them in the same order (as MPI requires), so #k names the same call everywhere.
//
// Thread-safety: Begin/End are called by the one thread that issues this communicator's
// collectives. Construction and destruction are collective over `comm` (they dup and free a
// communicator) and must happen before MPI finalisation. Querying other ranks needs full thread
// support (MPI's THREAD_MULTIPLE level); with less, the watchdog still times out and aborts,
// with only its own view.
//
// Stall inspector: below the hard limit, SetStallSeconds(s) (process-wide, set by the training
// loop to k times its median step) makes every watchdog of the process query the other ranks
// once a collective has run s seconds, and log (once per collective, without ending anything)
//   [rank 0] stall inspector: collective #40 allreduce(shm, in place) of 101800 bytes has run
//   1.52 s (the stall threshold is 1.00 s, the watchdog ends the job at 300 s); ranks that had
//   not joined it: [1]; busy (checkpoint or evaluation): []; no answer: []
// A wait on busy ranks only (a checkpoint being written) is not reported.
//
// Busy phases: a rank that spends long outside collectives on purpose (rank 0 writing a
// checkpoint while the others wait in the next step's all-reduce; an evaluation) opens a
// BusyScope. The flag is process-wide: every watchdog of the process sends it with its answer
// to a status query. A rank whose collective timed out restarts its clock, instead of ending
// the job, when every rank that has not joined the collective answered and said it is busy
// (logged once per collective); a rank that does not answer, or has not joined and is not
// busy, ends the job as above. So a slow checkpoint write never kills a healthy job, and a
// rank that hangs inside a busy phase but still answers keeps its peers waiting (it is alive
// and doing I/O; the job's own time limit bounds it). Without full thread support no queries
// are made and a busy peer is not seen: the timeout then ends the job as before.
// BusyScope is thread-safe (nested or concurrent scopes are counted).
//
// Point-to-point: a wait outside any collective (Communicator::WaitAll, SendRecv) is not
// watched by the thread; WaitPointToPoint polls the requests itself and, when they are not done
// within the same timeout, cancels what it can and throws Error(kCommunication) with one line
// such as
//   watchdog: receive of 8 bytes from rank 1 (tag 7) did not complete within 0.5 s (waited
//   0.50 s on rank 0; 1 of 1 requests pending)
// so the caller can fail cleanly. Waits inside a collective are left to the collective watchdog,
// whose report names the collective and every rank's progress. WaitPointToPoint is
// thread-compatible: concurrent calls on different request lists are fine.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_handle.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::comm {

struct WatchdogOptions {
  // A collective running longer than this ends the job. Must be > 0.
  double timeout_seconds = 300.0;
  // How often the thread checks the running collective and answers queries. Smaller reacts
  // faster to a query; each wake-up costs one probe for queries.
  double poll_seconds = 0.05;
  // How long a timed-out rank waits for the other ranks' answers before reporting.
  double reply_seconds = 1.0;
};

class Watchdog {
 public:
  // Collective over `comm`. Throws Error(kInvalidArgument) for a timeout <= 0.
  Watchdog(MPI_Comm comm, const WatchdogOptions& options);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Marks the start of the next collective. `op` must be a string literal (it is kept as a
  // pointer). Returns the collective's number (1-based).
  uint64_t Begin(const char* op, size_t bytes);
  // Marks the end of the collective begun last.
  void End();

  uint64_t entered() const { return entered_.load(std::memory_order_relaxed); }
  uint64_t completed() const { return completed_.load(std::memory_order_relaxed); }
  // True between Begin and End (read by the thread that calls them).
  bool in_collective() const { return entered() != completed(); }
  double timeout_seconds() const { return options_.timeout_seconds; }
  // The stall inspector's threshold for every watchdog of this process (see above); <= 0: off.
  // Thread-safe.
  static void SetStallSeconds(double seconds);

  // The report a timeout produces, given each other rank's answer; exposed for tests.
  // progress[i] = {entered, completed} of rank i, or {-1, -1} when rank i did not answer
  // (progress[self] is ignored).
  static std::string Describe(uint64_t collective, const char* op, size_t bytes, int ranks,
                              int self, double timeout_seconds,
                              const std::vector<std::array<int64_t, 2>>& progress);

 private:
  void Run() EXCLUDES(mutex_);
  void AnswerQueries();
  // Ends the job naming the ranks' progress, unless every rank that has not joined collective
  // #`collective` answered busy: then returns (the caller restarts its clock).
  void ReportTimeout(uint64_t collective);
  // Every other rank's {entered, completed, busy} as it answered a query about #collective
  // ({-1, -1, 0}: no answer within reply_seconds). cancel_late: cancel the receives of answers
  // still missing (the job goes on); else they are left pending (the job is about to end).
  std::vector<std::array<int64_t, 3>> Query(uint64_t collective, bool cancel_late);
  // Logs the stall of #collective, running for `running_ns`, with the ranks' progress.
  void ReportStall(uint64_t collective, int64_t running_ns);

  WatchdogOptions options_;
  MpiComm comm_;
  int rank_ = 0;
  int size_ = 1;
  bool can_query_ = false;
  uint64_t logged_busy_ = 0;     // the last collective a wait on busy ranks was logged for
  uint64_t stall_reported_ = 0;  // the last collective a stall was logged for (thread only)

  std::atomic<uint64_t> entered_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<int64_t> started_ns_{0};
  std::atomic<const char*> op_{""};
  std::atomic<size_t> bytes_{0};

  Mutex mutex_;
  CondVar wake_;
  bool stop_ GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

// One outstanding point-to-point request, as a timed-out wait reports it.
struct PointToPoint {
  bool is_send = false;
  int peer = 0;
  int tag = 0;
  size_t bytes = 0;
};

// Completes every request in `requests` (ops[i] describes requests[i]) by polling: it spins for
// a short while, then naps between polls so a long wait does not hold a core. When they are not
// all complete after `timeout_seconds`, completes or cancels each request and throws
// Error(kCommunication) naming the first incomplete operation, its peer and the seconds waited.
// A cancelled receive never writes its buffer afterwards; an unfinished send is released to
// MPI, which may still read its buffer (the job is expected to end on the error).
// REQUIRES: ops.size() == requests.size(); timeout_seconds > 0.
void WaitPointToPoint(std::vector<MPI_Request>& requests, const std::vector<PointToPoint>& ops,
                      double timeout_seconds, int rank);

// The line WaitPointToPoint throws; exposed for tests.
std::string DescribePointToPointTimeout(const PointToPoint& op, double timeout_seconds,
                                        double waited_seconds, int rank, size_t pending,
                                        size_t total);

// Marks this process busy (see "Busy phases" above) while it lives.
class BusyScope {
 public:
  BusyScope();
  ~BusyScope();
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;
  // Whether a BusyScope is open in this process.
  static bool busy();
};

// RAII Begin/End; a null watchdog does nothing.
class CollectiveScope {
 public:
  CollectiveScope(Watchdog* watchdog, const char* op, size_t bytes) : watchdog_(watchdog) {
    if (watchdog_ != nullptr) watchdog_->Begin(op, bytes);
  }
  ~CollectiveScope() {
    if (watchdog_ != nullptr) watchdog_->End();
  }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

 private:
  Watchdog* watchdog_;
};

}  // namespace shardflow::comm
