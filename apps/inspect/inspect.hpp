// shardflow-inspect: look into data files without writing code.
//
//   verify FILE...          checks framing, CRCs and that every record parses as a
//   tf.train.Example;
//                           one line per file: "FILE: ok, N records, B bytes" (B: the record
//                           stream's size, uncompressed for .gz/.zlib) or
//                           "FILE: data loss at byte O (record R): REASON"
//   cat FILE...             one JSON object per record per line:
//                           {"file": F, "record": R, "offset": O, "features": {NAME: {"int64":
//                           [...]}
//                            | {"float": [...]} | {"bytes": ["<base64>", ...]}}}
//   stats [--json] FILE...  record count and, per feature and kind, the number of values and
//                           exact sums (int64: exact integer; float: double; bytes: total length
//                           and the sum of all byte values)
//
// HDF5 files (apps/inspect/hdf5_handler.cpp): verify reads every dataset ("FILE: ok, N datasets,
// B bytes" or "FILE: data loss in dataset D: REASON"); stats adds, per file and dataset, dtype,
// shape, element count and sum ("datasets" in --json); cat is refused (exit 2).
//
// Exit codes: 0 all clean, 3 any data loss, 2 usage error or an unreadable file (which wins over
// data loss: the report is incomplete).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace shardflow::inspect {

struct InspectOptions {
  std::string command;  // verify | cat | stats
  bool json = false;    // stats only
  std::vector<std::string> files;
};

// Parses argv (without the program name). Throws Error(kInvalidArgument) on bad usage.
InspectOptions ParseArgs(const std::vector<std::string>& args);
std::string Usage();

// Runs the command, writing results to out and problems to err; returns the exit code.
int Run(const InspectOptions& options, std::ostream& out, std::ostream& err);

}  // namespace shardflow::inspect
