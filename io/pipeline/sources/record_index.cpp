#include "io/pipeline/sources/record_index.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <tuple>

#include "core/thread_annotations.hpp"

namespace shardflow::pipeline {
namespace {

using Offsets = std::shared_ptr<const std::vector<uint64_t>>;

// Offsets of the records of files read once in this process (sources without a RecordIndex),
// by file name, size and mtime: a changed file is read again.
struct OffsetMemo {
  Mutex mu;
  std::map<std::tuple<std::string, uint64_t, int64_t>, Offsets> offsets GUARDED_BY(mu);
};

OffsetMemo& Memo() {
  static OffsetMemo memo;
  return memo;
}

std::tuple<std::string, uint64_t, int64_t> KeyOf(const FileInfo& file) {
  return {file.name, file.size_bytes, file.mtime_ns};
}

Offsets Remembered(const RecordSource& source, size_t file) {
  OffsetMemo& memo = Memo();
  MutexLock lock(memo.mu);
  const auto it = memo.offsets.find(KeyOf(source.Files()[file]));
  return it == memo.offsets.end() ? nullptr : it->second;
}

// Every record offset of `file`, ascending.
Offsets OffsetsOf(const RecordSource& source, size_t file) {
  if (const auto* index = dynamic_cast<const RecordIndex*>(&source)) {
    return std::make_shared<const std::vector<uint64_t>>(index->RecordOffsets(file));
  }
  if (Offsets known = Remembered(source, file)) return known;
  auto offsets = std::make_shared<std::vector<uint64_t>>();
  std::unique_ptr<RecordReader> reader = source.Open(file, ByteRange{});
  Element e;
  while (reader->Next(&e)) offsets->push_back(static_cast<uint64_t>(e.where.offset));
  OffsetMemo& memo = Memo();
  MutexLock lock(memo.mu);
  memo.offsets[KeyOf(source.Files()[file])] = offsets;
  return offsets;
}

}  // namespace

ShardPlan PlanSourceShards(const RecordSource& source, ShardPolicy policy, int num_ranks, int rank,
                           const std::vector<int64_t>& weights) {
  ShardPlan plan =
      PlanShards(source.Files(), source.SupportsByteRanges(), policy, num_ranks, rank, weights);
  if (plan.policy != ShardPolicy::kByteRange || num_ranks < 2) return plan;
  const size_t files = source.Files().size();
  std::vector<Offsets> offsets(files);
  std::vector<int64_t> first(files + 1, 0);  // global number of each file's first record
  for (size_t f = 0; f < files; ++f) {
    offsets[f] = OffsetsOf(source, f);
    first[f + 1] = first[f] + static_cast<int64_t>(offsets[f]->size());
  }
  const int64_t n = first[files];
  int64_t total = num_ranks, before = rank, mine = 1;
  if (!weights.empty()) {
    total = std::accumulate(weights.begin(), weights.end(), int64_t{0});
    before = std::accumulate(weights.begin(), weights.begin() + rank, int64_t{0});
    mine = weights[static_cast<size_t>(rank)];
  }
  // Records [lo, hi) of the sequence (n * w / total without overflow for any realistic n).
  const auto cut = [&](int64_t w) { return n / total * w + n % total * w / total; };
  const int64_t lo = cut(before), hi = cut(before + mine);
  const bool last = rank + 1 == num_ranks;
  plan.units.clear();
  for (size_t f = 0; f < files; ++f) {
    const int64_t a = std::max(lo, first[f]), b = std::min(hi, first[f + 1]);
    const bool tail = last && f + 1 == files;  // open-ended: records past a stale size
    if (a >= b && !tail) continue;
    // From the file's start when its first record is ours; to its end (open-ended: records past
    // a stale size) when its last record is.
    const std::vector<uint64_t>& o = *offsets[f];
    const auto at = [&](int64_t k) { return o[static_cast<size_t>(k - first[f])]; };
    ByteRange range;
    if (a > first[f]) range.begin = a < first[f + 1] ? at(a) : source.Files()[f].size_bytes;
    if (b < first[f + 1] && !tail) range.end = at(b);
    plan.units.push_back({f, range});
  }
  plan.reason += "; ranges cut at records: " + std::to_string(hi - lo) + " of " +
                 std::to_string(n) + " records on this rank";
  return plan;
}

int64_t CountPlannedRecords(const RecordSource& source, const ShardPlan& plan) {
  const auto* index = dynamic_cast<const RecordIndex*>(&source);
  int64_t total = 0;
  for (const ShardUnit& unit : plan.units) {
    Offsets known = index != nullptr || plan.policy != ShardPolicy::kByteRange
                        ? nullptr
                        : Remembered(source, unit.file_index);
    if (known) {
      const auto lo = std::lower_bound(known->begin(), known->end(), unit.range.begin);
      const auto hi = std::lower_bound(known->begin(), known->end(), unit.range.end);
      total += hi - lo;
      continue;
    }
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
