// Collective watchdog: turns a hung collective into a clear error instead of a silent hang.
//
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
// communicator) and must happen before MPI_Finalize. Querying other ranks needs
// MPI_THREAD_MULTIPLE; with less, the watchdog still times out and aborts, with only its own view.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_annotations.hpp"

namespace shardflow::comm {

struct WatchdogOptions {
  // A collective running longer than this ends the job. Must be > 0.
  double timeout_seconds = 300.0;
  // How often the thread checks the running collective and answers queries. Smaller reacts
  // faster to a query; each wake-up costs one MPI_Iprobe.
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

  // The report a timeout produces, given each other rank's answer; exposed for tests.
  // progress[i] = {entered, completed} of rank i, or {-1, -1} when rank i did not answer
  // (progress[self] is ignored).
  static std::string Describe(uint64_t collective, const char* op, size_t bytes, int ranks,
                              int self, double timeout_seconds,
                              const std::vector<std::array<int64_t, 2>>& progress);

 private:
  void Run() EXCLUDES(mutex_);
  void AnswerQueries();
  [[noreturn]] void ReportTimeout(uint64_t collective);

  WatchdogOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool can_query_ = false;

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
