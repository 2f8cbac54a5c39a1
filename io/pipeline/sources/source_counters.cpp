#include "io/pipeline/sources/source_counters.hpp"

#include <functional>
#include <unordered_set>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::pipeline {

OnError ParseOnError(const std::string& text, const std::string& key) {
  if (text == "fail" || text == "error") return OnError::kFail;
  if (text == "skip" || text == "drop") return OnError::kSkip;
  throw Error(ErrorCode::kInvalidArgument, "expected fail or skip, got '" + text + "'",
              {.key = key});
}

const char* OnErrorName(OnError on_error) { return on_error == OnError::kFail ? "fail" : "skip"; }

namespace {

constexpr int64_t kLoggedRecords = 10;

// The bad records this process has met, by the hash of their reason text (8 bytes a record).
struct SkipTally {
  Mutex mu;
  std::unordered_set<size_t> seen GUARDED_BY(mu);
};

SkipTally& Tally() {
  static SkipTally tally;
  return tally;
}

}  // namespace

void CountSkip(SourceCounters& counters, const std::string& reason) {
  counters.skipped_records.fetch_add(1, std::memory_order_relaxed);
  SkipTally& tally = Tally();
  int64_t n = 0;
  {
    MutexLock lock(tally.mu);
    if (!tally.seen.insert(std::hash<std::string>{}(reason)).second) return;
    n = static_cast<int64_t>(tally.seen.size());
  }
  if (n <= kLoggedRecords) {
    SF_LOG(Warn) << "skipping bad record: " << reason
                 << (n == kLoggedRecords ? " (further bad records are counted, not logged)" : "");
  }
}

int64_t DistinctSkippedRecords() {
  SkipTally& tally = Tally();
  MutexLock lock(tally.mu);
  return static_cast<int64_t>(tally.seen.size());
}

}  // namespace shardflow::pipeline
