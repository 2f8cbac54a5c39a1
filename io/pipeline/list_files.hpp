// ListFiles: the files matching glob patterns, sorted, optionally shuffled with a seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardflow::pipeline {

// Expands `pattern` (glob(3): *, ?, [..]) and returns the matches sorted by name; with
// shuffle, permuted by a seeded RNG (the same on every rank for the same seed). Throws
// Error(kNotFound) naming the pattern when nothing matches, kInvalidArgument for a bad pattern.
std::vector<std::string> ListFiles(const std::string& pattern, bool shuffle = false,
                                   uint64_t seed = 0);
// Several patterns: the union, deduplicated, each pattern must match something.
std::vector<std::string> ListFiles(const std::vector<std::string>& patterns, bool shuffle = false,
                                   uint64_t seed = 0);

}  // namespace shardflow::pipeline
