// What a source did not deliver: records skipped under OnError::kSkip and bytes dropped (the
// tail of a fixed-length file that is not a whole record). Sources share one SourceCounters
// between all their readers; the counts cover every reader of the source (all epochs).
// Thread-safety: the counters are atomics; readers on several threads update them. CountSkip and
// DistinctSkippedRecords are safe from any thread (the process-wide tally is under a mutex).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace shardflow::pipeline {

// What a source does with a bad record (malformed JSON line, missing field, corrupt image,
// partial fixed-length tail): fail with an Error naming file, line/record and field, or skip it
// and count it (a warning names the first few).
enum class OnError { kFail, kSkip };

// "fail" | "skip" (also "error" / "drop"); throws Error(kInvalidArgument) naming `key`.
OnError ParseOnError(const std::string& text, const std::string& key = "on_error");
const char* OnErrorName(OnError on_error);

struct SourceCounters {
  // Every skip of this source's readers (a record read in 3 epochs counts 3 times).
  std::atomic<int64_t> skipped_records{0};
  std::atomic<int64_t> dropped_bytes{0};
};

// Counts one skipped record in `counters` and, the first time this process meets the record,
// in the process-wide tally (DistinctSkippedRecords): a bad record is known by `reason` (an
// Error's one-line text, naming the file and line/record), so the counting pass, the read pass
// and later epochs meet it once. The first 10 distinct records are logged with their reason, one
// warning each; the rest are counted only (the apps report the total). A non-empty `key` names
// the record instead of `reason` (a decode's message may differ between fused and unfused
// decodes of the same record).
void CountSkip(SourceCounters& counters, const std::string& reason, const std::string& key = "");

// The key CountSkip knows a record by when its error context names the file and record
// ("record R of FILE"); "" when it does not.
std::string RecordKey(const ErrorContext& where);

// Distinct bad records skipped by this process so far, over every source (see CountSkip).
int64_t DistinctSkippedRecords();

// Logs `message` as a warning the first time this process meets it (a partial fixed-length
// record is found each time a source opens the file: counting pass, read pass, epochs).
void WarnOnce(const std::string& message);

}  // namespace shardflow::pipeline
