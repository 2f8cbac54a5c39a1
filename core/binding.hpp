// Where each rank runs: host, local rank, GPU and CPU cores, gathered on rank 0.
//
// slurm/launch.sh binds each local rank to its own GPU and contiguous cores, then sets
// SHARDFLOW_BINDING_REPORT=1 (and SHARDFLOW_BINDING_CHECK=1 with --check). RunMain reads them
// at start: rank 0 prints one table; with the check, two ranks of one host sharing a GPU or a
// core are an error reported once, before any work starts. The gather itself lives with the
// MPI bootstrap (core/mpi_env.cpp); this file is plain data and text.
// Thread-safety: every function is thread-compatible (no shared state).
#pragma once

#include <string>
#include <vector>

namespace shardflow {

struct Binding {
  int rank = 0;
  std::string host;
  int local_rank = 0;
  std::string gpu;         // CUDA_VISIBLE_DEVICES as seen by the rank; "-" when unset
  std::vector<int> cores;  // the CPUs this process may run on (sched_getaffinity)
};

// This process's binding.
Binding CurrentBinding(int rank, int local_rank);

// One line of text that ParseBinding turns back into the same Binding (what ranks send to
// rank 0 for the table).
std::string SerializeBinding(const Binding& binding);
Binding ParseBinding(const std::string& text);

// "0-3,8,10-11"
std::string FormatCoreList(const std::vector<int>& cores);

// A table with a header: rank, host, local rank, GPU, cores.
std::string FormatBindingTable(const std::vector<Binding>& bindings);

// One message per conflict: two ranks on one host sharing a GPU, or sharing a core.
std::vector<std::string> FindBindingConflicts(const std::vector<Binding>& bindings);

}  // namespace shardflow
