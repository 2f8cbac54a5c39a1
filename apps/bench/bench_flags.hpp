// Flag values the shardflow-bench subcommands share: byte counts with K/M/G suffixes and
// positive integers. Each throws Error(kInvalidArgument) naming the flag and the text.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace shardflow::bench {

// "4096", "64K", "1.5M", "2GiB" -> bytes.
size_t ParseBytes(const std::string& flag, const std::string& text);
int ParsePositive(const std::string& flag, const std::string& text);
// "64K,1M" -> byte counts, in the order given.
std::vector<size_t> ParseByteList(const std::string& flag, const std::string& text);

}  // namespace shardflow::bench
