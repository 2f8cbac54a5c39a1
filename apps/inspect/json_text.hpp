// Small text helpers for shardflow-inspect's JSON output: exact integers, shortest round-trip
// floats, escaped strings and base64.
#pragma once

#include <string>
#include <string_view>

namespace shardflow::inspect {

// Exact sums of many int64 values need more than 64 bits (GCC/Clang extension).
__extension__ typedef __int128 Int128;

std::string JsonString(std::string_view s);
std::string JsonFloat(double v);   // shortest round-trip; NaN/Inf as strings
std::string JsonFloat32(float v);  // shortest text that reads back as the same float
std::string Int128ToString(Int128 v);
std::string Base64(std::string_view bytes);

}  // namespace shardflow::inspect
