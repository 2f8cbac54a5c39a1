// Levenshtein distance, for "did you mean" suggestions (config keys, strategy names).
// Thread-safety: a pure function.
#pragma once

#include <cstddef>
#include <string_view>

namespace shardflow {

// Insertions, deletions and substitutions that turn `a` into `b`.
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace shardflow
