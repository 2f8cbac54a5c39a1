#include "io/pipeline/sources/source_counters.hpp"

#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::pipeline {

OnError ParseOnError(const std::string& text, const std::string& key) {
  if (text == "fail" || text == "error") return OnError::kFail;
  if (text == "skip" || text == "drop") return OnError::kSkip;
  throw Error(ErrorCode::kInvalidArgument, "expected fail or skip, got '" + text + "'",
              {.key = key});
}

const char* OnErrorName(OnError on_error) { return on_error == OnError::kFail ? "fail" : "skip"; }

void CountSkip(SourceCounters& counters, const std::string& reason) {
  counters.skipped_records.fetch_add(1, std::memory_order_relaxed);
  const int64_t n = counters.logged.fetch_add(1, std::memory_order_relaxed);
  if (n < 10) {
    SF_LOG(Warn) << "skipping bad record: " << reason
                 << (n == 9 ? " (further skips not logged)" : "");
  }
}

}  // namespace shardflow::pipeline
