// MPI bootstrap and the top-level error handler every shardflow program runs under.
//
// A program's main() is:
//
//   int main(int argc, char** argv) {
//     Options opts;
//     return shardflow::RunMain(argc, argv,
//         [&](MpiEnvironment& env) { opts = ParseAndValidate(env, argc, argv); },
//         [&](MpiEnvironment& env) { return Run(env, opts); });
//   }
//
// The parse phase runs on every rank and is expected to fail identically everywhere (a bad
// flag, an unknown config key); ranks agree on the outcome with one all-reduce, the lowest
// failing rank prints the error once, and every rank exits with the same code. An error in the
// run phase is printed once, by the rank that hit it, prefixed with that rank, and ends the
// whole job with MPI_Abort and a non-zero code: no rank is left hanging in a collective.
#pragma once

#include <mpi.h>
#include <functional>
#include <vector>

namespace shardflow {

// Thrown by a parse phase that has finished the program's work (e.g. printed --help).
struct EarlyExit {
  int code = 0;
};

// RAII MPI_Init_thread / MPI_Finalize. Requests MPI_THREAD_MULTIPLE, which the communication
// thread needs; falls back to what MPI provides and records it.
class MpiEnvironment {
 public:
  MpiEnvironment(int* argc, char*** argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the processes of this node
  int local_size() const { return local_size_; }
  bool is_chief() const { return rank_ == 0; }
  int thread_level() const { return thread_level_; }  // MPI_THREAD_* provided
  MPI_Comm node_comm() const { return node_comm_; }   // the ranks sharing this node's memory
  // Every rank's node, as the world rank of that node's local rank 0 (gathered once at start).
  const std::vector<int>& node_of_rank() const { return node_of_rank_; }

 private:
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int thread_level_ = 0;
  MPI_Comm node_comm_ = MPI_COMM_NULL;
  std::vector<int> node_of_rank_;
  bool owns_init_ = false;
};

// This process's rank in MPI_COMM_WORLD, or -1 before MPI_Init / after MPI_Finalize.
int WorldRank();

// Runs parse then run under an MpiEnvironment and the error policy described at the top.
// Returns the process exit code (0 on success).
int RunMain(int argc, char** argv, const std::function<void(MpiEnvironment&)>& parse,
            const std::function<int(MpiEnvironment&)>& run);

// Prints "[rank R] error: WHAT" to stderr as one write and ends the job with MPI_Abort(code).
// For fatal conditions detected off the main thread (a watchdog, a communication thread).
[[noreturn]] void AbortJob(const char* what, int code);

// Collective cleanup while an error unwinds. An error on one rank of a multi-rank job ends the
// whole job (RunMain calls AbortJob with that rank's line), so a destructor met on the way must
// not start a collective operation (closing an MPI-IO file, freeing a shared window) that the
// other ranks, waiting in some other collective, never join: it skips the cleanup when
// UnwindingAlone() is true and leaves it to the job's end. Code that catches an error and then
// agrees on it with every rank (a checkpoint write) holds a CollectiveRecovery for that section,
// and cleanup inside it runs as usual, matched by the other ranks' cleanup.
// Thread-safety: the recovery depth is per thread; UnwindingAlone() is safe from any thread.
class CollectiveRecovery {
 public:
  CollectiveRecovery();
  ~CollectiveRecovery();
  CollectiveRecovery(const CollectiveRecovery&) = delete;
  CollectiveRecovery& operator=(const CollectiveRecovery&) = delete;
};

// True while this thread unwinds an exception, outside any CollectiveRecovery, in a job of more
// than one rank.
bool UnwindingAlone();

}  // namespace shardflow
