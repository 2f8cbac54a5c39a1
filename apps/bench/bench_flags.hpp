// Flag parsing the shardflow-bench subcommands share: a cursor over "--flag [value]" arguments,
// and values (byte counts with K/M/G suffixes, positive integers). Each throws
// Error(kInvalidArgument) naming the flag and the text.
//
//   for (FlagCursor f(args, "allreduce"); f.Next();) {
//     if (f.Is("--json")) json = true;
//     else if (f.Is("--iters")) iters = ParsePositive(f.flag(), f.Value());
//     else f.Unknown();
//   }
// Thread-safety: pure functions; a FlagCursor is used by one thread.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "comm/communicator.hpp"

namespace shardflow::bench {

class FlagCursor {
 public:
  FlagCursor(const std::vector<std::string>& args, std::string command)
      : args_(args), command_(std::move(command)) {}
  // Moves to the next flag; false at the end.
  bool Next() { return ++i_ < args_.size(); }
  const std::string& flag() const { return args_[i_]; }
  bool Is(const char* name) const { return flag() == name; }
  bool IsHelp() const { return Is("--help") || Is("-h"); }
  // The argument after the flag (consumed); throws when there is none.
  const std::string& Value();
  // Throws the "unknown flag" error, pointing at the subcommand's --help.
  [[noreturn]] void Unknown() const;

 private:
  const std::vector<std::string>& args_;
  std::string command_;
  size_t i_ = static_cast<size_t>(-1);
};

// Runs `parse` on every rank of `comm` (collective): when it throws Error on some rank, rank 0
// prints that rank's error once and every rank gets false (exit with the usage code, 2), instead
// of every rank's abort.
bool ParsedOnEveryRank(comm::Communicator& comm, const std::function<void()>& parse);

// "4096", "64K", "1.5M", "2GiB" -> bytes.
size_t ParseBytes(const std::string& flag, const std::string& text);
int ParsePositive(const std::string& flag, const std::string& text);
// "64K,1M" -> byte counts, in the order given.
std::vector<size_t> ParseByteList(const std::string& flag, const std::string& text);

}  // namespace shardflow::bench
