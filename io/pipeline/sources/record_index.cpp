#include "io/pipeline/sources/record_index.hpp"

#include <algorithm>

namespace shardflow::pipeline {

int64_t CountPlannedRecords(const RecordSource& source, const ShardPlan& plan) {
  const auto* index = dynamic_cast<const RecordIndex*>(&source);
  int64_t total = 0;
  for (const ShardUnit& unit : plan.units) {
    if (index != nullptr) {
      const std::vector<uint64_t> offsets = index->RecordOffsets(unit.file_index);
      const auto lo = std::lower_bound(offsets.begin(), offsets.end(), unit.range.begin);
      const auto hi = std::lower_bound(offsets.begin(), offsets.end(), unit.range.end);
      if (plan.policy == ShardPolicy::kRecord) {
        for (auto it = lo; it != hi; ++it) {
          if (plan.KeepsRecord(it - offsets.begin(), unit.file_index)) ++total;
        }
      } else {
        total += hi - lo;
      }
      continue;
    }
    std::unique_ptr<RecordReader> reader = source.Open(unit.file_index, unit.range);
    Element e;
    int64_t k = 0;
    while (reader->Next(&e)) {
      const int64_t rec = e.where.record >= 0 ? e.where.record : k;
      if (plan.KeepsRecord(rec, unit.file_index)) ++total;
      ++k;
    }
  }
  return total;
}

}  // namespace shardflow::pipeline
