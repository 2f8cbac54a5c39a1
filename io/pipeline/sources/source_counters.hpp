// What a source did not deliver: records skipped under OnError::kSkip and bytes dropped (the
// tail of a fixed-length file that is not a whole record). Sources share one SourceCounters
// between all their readers; the counts cover every reader of the source (all epochs).
// Thread-safety: the counters are atomics; readers on several threads update them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace shardflow::pipeline {

// What a source does with a bad record (malformed JSON line, missing field, corrupt image,
// partial fixed-length tail): fail with an Error naming file, line/record and field, or skip it
// and count it (a warning names the first few).
enum class OnError { kFail, kSkip };

// "fail" | "skip" (also "error" / "drop"); throws Error(kInvalidArgument) naming `key`.
OnError ParseOnError(const std::string& text, const std::string& key = "on_error");
const char* OnErrorName(OnError on_error);

struct SourceCounters {
  std::atomic<int64_t> skipped_records{0};
  std::atomic<int64_t> dropped_bytes{0};
  // Skips logged so far (the first few are logged with their reason).
  std::atomic<int64_t> logged{0};
};

// Counts one skipped record and logs `reason` (an Error's one-line text) for the first 10.
void CountSkip(SourceCounters& counters, const std::string& reason);

}  // namespace shardflow::pipeline
