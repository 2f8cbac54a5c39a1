#include "core/straggler.hpp"

#include <algorithm>
#include <cstdio>

namespace shardflow {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return (upper + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

// One step: the last rank, its margin over the others' median arrival and the input part.
struct StepVerdict {
  int last = 0;
  double margin_s = 0;
  double input_s = 0;
};

StepVerdict Attribute(const std::vector<std::vector<StepArrival>>& per_rank, size_t t,
                      std::vector<double>* arrivals, std::vector<double>* waits) {
  const int ranks = static_cast<int>(per_rank.size());
  StepVerdict v;
  for (int r = 1; r < ranks; ++r) {
    if (per_rank[static_cast<size_t>(r)][t].arrival_s >
        per_rank[static_cast<size_t>(v.last)][t].arrival_s) {
      v.last = r;
    }
  }
  arrivals->clear();
  waits->clear();
  for (int r = 0; r < ranks; ++r) {
    if (r == v.last) continue;
    arrivals->push_back(per_rank[static_cast<size_t>(r)][t].arrival_s);
    waits->push_back(per_rank[static_cast<size_t>(r)][t].input_s);
  }
  const StepArrival& late = per_rank[static_cast<size_t>(v.last)][t];
  v.margin_s = late.arrival_s - Median(*arrivals);
  v.input_s = std::clamp(late.input_s - Median(*waits), 0.0, v.margin_s);
  return v;
}

}  // namespace

StragglerReport AttributeStragglers(const std::vector<std::vector<StepArrival>>& per_rank) {
  StragglerReport s;
  const size_t ranks = per_rank.size();
  if (ranks < 2) return s;
  size_t steps = per_rank[0].size();
  for (const auto& r : per_rank) steps = std::min(steps, r.size());
  if (steps == 0) return s;
  std::vector<int64_t> last_count(ranks, 0);
  std::vector<StepVerdict> verdicts(steps);
  std::vector<double> arrivals, waits;
  for (size_t t = 0; t < steps; ++t) {
    verdicts[t] = Attribute(per_rank, t, &arrivals, &waits);
    ++last_count[static_cast<size_t>(verdicts[t].last)];
  }
  s.steps = static_cast<int64_t>(steps);
  s.rank =
      static_cast<int>(std::max_element(last_count.begin(), last_count.end()) - last_count.begin());
  for (int64_t n : last_count) {
    s.last_per_rank.push_back(static_cast<double>(n) / static_cast<double>(steps));
  }
  s.last_fraction = s.last_per_rank[static_cast<size_t>(s.rank)];
  std::vector<double> margins;
  double margin_sum = 0, input_sum = 0;
  for (const StepVerdict& v : verdicts) {
    if (v.last != s.rank) continue;
    margins.push_back(v.margin_s);
    margin_sum += v.margin_s;
    input_sum += v.input_s;
  }
  s.margin_s = Median(margins);
  s.input_share = margin_sum > 0 ? input_sum / margin_sum : 0;
  s.cause = s.input_share >= 0.5 ? std::string("input") : std::string("compute");
  return s;
}

void ExplainByShard(StragglerReport* s) {
  s->why.clear();
  const size_t ranks = s->last_per_rank.size();
  if (!s->NeedsShards() || s->shards.size() != ranks) return;
  for (const ShardSize& shard : s->shards) {
    if (shard.bytes < 0 || shard.records < 0) return;
  }
  std::vector<double> bytes, records;
  for (size_t r = 0; r < ranks; ++r) {
    if (static_cast<int>(r) == s->rank) continue;
    bytes.push_back(static_cast<double>(s->shards[r].bytes));
    records.push_back(static_cast<double>(s->shards[r].records));
  }
  const ShardSize& mine = s->shards[static_cast<size_t>(s->rank)];
  const double typical_bytes = Median(bytes), typical_records = Median(records);
  constexpr double kExplains = 1.25;
  char detail[200];
  std::snprintf(detail, sizeof(detail),
                "(%.1f MB, %lld records; the other ranks' median %.1f MB, %.0f records)",
                static_cast<double>(mine.bytes) / 1e6, static_cast<long long>(mine.records),
                typical_bytes / 1e6, typical_records);
  char line[300];
  if (typical_bytes > 0 && static_cast<double>(mine.bytes) >= kExplains * typical_bytes) {
    std::snprintf(line, sizeof(line), "its shard's files are %.1fx larger %s",
                  static_cast<double>(mine.bytes) / typical_bytes, detail);
  } else if (typical_records > 0 &&
             static_cast<double>(mine.records) >= kExplains * typical_records) {
    std::snprintf(line, sizeof(line), "its shard has %.1fx the records %s",
                  static_cast<double>(mine.records) / typical_records, detail);
  } else {
    return;
  }
  s->why = line;
}

std::string FormatStraggler(const StragglerReport& s) {
  if (s.rank < 0) return "";
  char line[320];
  std::snprintf(line, sizeof(line),
                "%srank %d was last to %s in %.0f%% of %lld steps, +%.1f ms (median), "
                "%s-bound (input wait %.0f%% of its extra time)",
                s.Clear() ? "" : "no clear straggler (ranks take turns being last): ", s.rank,
                s.waited_at.c_str(), 100 * s.last_fraction, static_cast<long long>(s.steps),
                1e3 * s.margin_s, s.cause.c_str(), 100 * s.input_share);
  return s.why.empty() ? std::string(line) : std::string(line) + ": " + s.why;
}

}  // namespace shardflow
