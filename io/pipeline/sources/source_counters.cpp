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

// Texts met by this process, by their hash (8 bytes each).
class SeenSet {
 public:
  // The number of texts seen, counting `text`, when it is new; 0 when it was seen before.
  int64_t Insert(const std::string& text) {
    MutexLock lock(mu_);
    if (!seen_.insert(std::hash<std::string>{}(text)).second) return 0;
    return static_cast<int64_t>(seen_.size());
  }
  int64_t size() {
    MutexLock lock(mu_);
    return static_cast<int64_t>(seen_.size());
  }

 private:
  Mutex mu_;
  std::unordered_set<size_t> seen_ GUARDED_BY(mu_);
};

SeenSet& BadRecords() {  // by reason text
  static SeenSet set;
  return set;
}

SeenSet& Warnings() {
  static SeenSet set;
  return set;
}

}  // namespace

void CountSkip(SourceCounters& counters, const std::string& reason, const std::string& key) {
  counters.skipped_records.fetch_add(1, std::memory_order_relaxed);
  const int64_t n = BadRecords().Insert(key.empty() ? reason : key);
  if (n > 0 && n <= kLoggedRecords) {
    SF_LOG(Warn) << "skipping bad record: " << reason
                 << (n == kLoggedRecords ? " (further bad records are counted, not logged)" : "");
  }
}

void WarnOnce(const std::string& message) {
  if (Warnings().Insert(message) > 0) SF_LOG(Warn) << message;
}

std::string RecordKey(const ErrorContext& where) {
  if (where.file.empty() || !where.record) return "";
  return "record " + std::to_string(*where.record) + " of " + where.file;
}

int64_t DistinctSkippedRecords() { return BadRecords().size(); }

}  // namespace shardflow::pipeline
