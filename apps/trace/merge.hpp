// shardflow-trace merge OUTPUT [--out FILE]: the per-rank traces a run wrote with
// `[log] trace = true` (OUTPUT/trace.rankN.json) as one Chrome trace on one time axis
// (OUTPUT/trace.json by default), rank 0's clock when the files carry the clock samples the
// trainer measures (comm/clock_sync.hpp), else the wall clock (core/trace.hpp MergeTraceFiles).
// Thread-safety: single-threaded tool code.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace shardflow::trace_tool {

struct MergeOptions {
  std::string run_dir;  // OUTPUT of shardflow-train
  std::string out;      // "" : run_dir/trace.json
};

std::string Usage();
// Throws Error(kInvalidArgument) naming the argument.
MergeOptions ParseArgs(const std::vector<std::string>& args);
// OUTPUT/trace.rankN.json files, by rank. Throws Error(kNotFound) when there is none.
std::vector<std::string> RankTraceFiles(const std::string& run_dir);
// Merges and prints one line on `out`: ranks, events, the clock used and its error. Returns
// the exit status (0; errors are thrown as Error).
int RunMerge(const MergeOptions& options, std::ostream& out);

}  // namespace shardflow::trace_tool
