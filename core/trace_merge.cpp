// MergeTraceFiles (core/trace.hpp): per-rank Chrome traces onto one time axis.
//
// Each file's timestamps count in microseconds from its own origin. Two ways to align them:
//   wall clock: shift each file by its wall_origin_us minus the earliest one (exact on one node,
//     across nodes as good as NTP);
//   clock samples (when every file has otherData.clock_sync and mono_origin_ns): a timestamp is
//     first a point on its rank's monotonic clock (mono_origin_ns + ts), then on rank 0's (plus
//     the offset measured against rank 0, interpolated linearly between the samples, which
//     corrects a drift between them, and held constant beyond them), then counted from the
//     earliest origin so mapped. A span's end is mapped the same way, so its duration follows
//     the drift too. The merged file records the largest measurement error (clock_error_us).
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/trace.hpp"

namespace shardflow {
namespace {

using nlohmann::json;

struct Input {
  json doc;
  int64_t wall_origin_us = 0;
  int64_t mono_origin_ns = 0;
  std::vector<TraceClockSample> samples;  // sorted by local_ns
};

// Rank 0's clock minus this rank's at `local_ns`.
double OffsetAt(const std::vector<TraceClockSample>& s, double local_ns) {
  if (s.size() == 1 || local_ns <= static_cast<double>(s.front().local_ns)) {
    return static_cast<double>(s.front().offset_ns);
  }
  if (local_ns >= static_cast<double>(s.back().local_ns)) {
    return static_cast<double>(s.back().offset_ns);
  }
  size_t i = 1;
  while (static_cast<double>(s[i].local_ns) < local_ns) ++i;
  const TraceClockSample &a = s[i - 1], &b = s[i];
  const double f = (local_ns - static_cast<double>(a.local_ns)) /
                   static_cast<double>(std::max<int64_t>(1, b.local_ns - a.local_ns));
  return static_cast<double>(a.offset_ns) + f * static_cast<double>(b.offset_ns - a.offset_ns);
}

// A timestamp (us from the file's origin) on rank 0's monotonic clock, in ns.
double OnRankZeroClock(const Input& in, double ts_us) {
  const double local = static_cast<double>(in.mono_origin_ns) + ts_us * 1e3;
  return local + OffsetAt(in.samples, local);
}

Input ReadInput(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    throw Error(ErrorCode::kNotFound,
                std::string("cannot open trace file: ") + std::strerror(errno), {.file = path});
  }
  Input input;
  input.doc = json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (input.doc.is_discarded() || !input.doc.is_object() || !input.doc.contains("traceEvents") ||
      !input.doc["traceEvents"].is_array()) {
    throw Error(ErrorCode::kDataLoss, "not a Chrome trace (no traceEvents array)", {.file = path});
  }
  const json& other = input.doc.value("otherData", json::object());
  input.wall_origin_us = other.value("wall_origin_us", int64_t{0});
  input.mono_origin_ns = other.value("mono_origin_ns", int64_t{0});
  if (other.contains("clock_sync") && other["clock_sync"].is_array()) {
    for (const json& c : other["clock_sync"]) {
      input.samples.push_back({.local_ns = c.value("local_ns", int64_t{0}),
                               .offset_ns = c.value("offset_ns", int64_t{0}),
                               .error_ns = c.value("error_ns", int64_t{0})});
    }
  }
  std::sort(
      input.samples.begin(), input.samples.end(),
      [](const TraceClockSample& a, const TraceClockSample& b) { return a.local_ns < b.local_ns; });
  return input;
}

void CheckDistinctPids(const Input& input, const std::string& path, std::set<int64_t>* pids) {
  std::set<int64_t> file_pids;
  for (const json& event : input.doc["traceEvents"]) {
    if (event.is_object() && event.contains("pid") && event["pid"].is_number_integer()) {
      file_pids.insert(event["pid"].get<int64_t>());
    }
  }
  for (const int64_t pid : file_pids) {
    if (!pids->insert(pid).second) {
      throw Error(ErrorCode::kInvalidArgument,
                  "pid " + std::to_string(pid) + " appears in two trace files to merge",
                  {.file = path, .hint = "merge the files of one run, one per rank"});
    }
  }
}

}  // namespace

void MergeTraceFiles(const std::vector<std::string>& inputs, const std::string& output) {
  std::vector<Input> docs;
  std::set<int64_t> pids;
  uint64_t dropped = 0;
  bool synced = !inputs.empty();
  for (const std::string& path : inputs) {
    docs.push_back(ReadInput(path));
    CheckDistinctPids(docs.back(), path, &pids);
    dropped += docs.back().doc["otherData"].value("dropped_events", uint64_t{0});
    synced = synced && !docs.back().samples.empty() && docs.back().mono_origin_ns != 0;
  }
  int64_t earliest_wall = INT64_MAX;
  double earliest_ns = 1e300, error_ns = 0;
  for (const Input& in : docs) {
    earliest_wall = std::min(earliest_wall, in.wall_origin_us);
    if (!synced) continue;
    earliest_ns = std::min(earliest_ns, OnRankZeroClock(in, 0));
    for (const TraceClockSample& c : in.samples) {
      error_ns = std::max(error_ns, static_cast<double>(c.error_ns));
    }
  }
  json merged_events = json::array();
  for (Input& input : docs) {
    const double shift_us = static_cast<double>(input.wall_origin_us - earliest_wall);
    for (json& event : input.doc["traceEvents"]) {
      if (event.is_object() && event.contains("ts") && event["ts"].is_number()) {
        const double ts = event["ts"].get<double>();
        if (!synced) {
          event["ts"] = ts + shift_us;
        } else {
          const double start = OnRankZeroClock(input, ts);
          event["ts"] = (start - earliest_ns) * 1e-3;
          if (event.contains("dur") && event["dur"].is_number()) {
            const double end = OnRankZeroClock(input, ts + event["dur"].get<double>());
            event["dur"] = (end - start) * 1e-3;
          }
        }
      }
      merged_events.push_back(std::move(event));
    }
  }
  json other = {{"merged_from", inputs},
                {"wall_origin_us", docs.empty() ? 0 : earliest_wall},
                {"dropped_events", dropped},
                {"clock", synced ? "mpi ping-pong against rank 0" : "wall clock"}};
  if (synced) other["clock_error_us"] = error_ns * 1e-3;
  const json merged = {{"traceEvents", std::move(merged_events)},
                       {"displayTimeUnit", "ms"},
                       {"otherData", std::move(other)}};
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out << merged.dump() << "\n";
  out.close();
  if (!out) {
    throw Error(ErrorCode::kIo, std::string("cannot write trace: ") + std::strerror(errno),
                {.file = output});
  }
}

}  // namespace shardflow
