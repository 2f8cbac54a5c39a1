// ListFiles: the files matching glob patterns, sorted, optionally shuffled with a seed.
// Thread-safety: the functions may be called from any thread (glob's error report is kept per
// thread). Relative patterns resolve against the working directory, as glob(3) does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardflow::pipeline {

// Expands `pattern` (glob(3): *, ?, [..]) and returns the matches sorted by name; with
// shuffle, permuted by a seeded RNG (the same on every rank for the same seed). Throws
// Error(kNotFound) naming the pattern and the folder it looked in when nothing matches,
// kInvalidArgument for a bad pattern.
std::vector<std::string> ListFiles(const std::string& pattern, bool shuffle = false,
                                   uint64_t seed = 0);
// Several patterns: the union, deduplicated, each pattern must match something.
std::vector<std::string> ListFiles(const std::vector<std::string>& patterns, bool shuffle = false,
                                   uint64_t seed = 0);
// ListFiles(patterns) for a usage check before any rank reads: its error names `given_as`, the
// key or flag the patterns came from ("data.files", "--input"), as key and hint.
void CheckFilesMatch(const std::vector<std::string>& patterns, const std::string& given_as);

}  // namespace shardflow::pipeline
