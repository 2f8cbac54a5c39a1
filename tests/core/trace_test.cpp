#include "core/trace.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/timer.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace trace_test {

using nlohmann::json;

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);  // throws if the file is not valid JSON
}

size_t TotalEvents() {
  size_t n = 0;
  for (const TraceThread& thread : SnapshotTrace()) n += thread.events.size();
  return n;
}

TEST(TimerTest, StopwatchAndAccumulator) {
  Stopwatch watch;
  const double lap1 = watch.Lap();
  const double lap2 = watch.Lap();
  EXPECT_GE(lap1, 0);
  EXPECT_GE(lap2, 0);
  EXPECT_GE(watch.Seconds(), lap1 + lap2 - 1e-9);
  EXPECT_GE(watch.Nanos(), 0);
  DurationAccumulator total;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) total.AddNanos(3);
      ScopedDuration scoped(&total);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(total.count(), 4 * 1001);
  EXPECT_GE(total.nanos(), 4 * 3000);
  total.Reset();
  EXPECT_EQ(total.count(), 0);
}

TEST(TraceTest, DisabledTracingRecordsNothing) {
  StopTracing();
  ClearTrace();
  ASSERT_FALSE(TracingEnabled());
  std::thread worker([] {
    SetTraceThreadName("disabled worker");
    for (int i = 0; i < 100; ++i) {
      SF_TRACE_SCOPE("span");
      TraceScope dynamic(std::string("dynamic ") + std::to_string(i));
      TraceBegin("begin");
      TraceEnd();
      TraceCounter("counter", i);
      TraceInstant("instant");
    }
  });
  worker.join();
  EXPECT_EQ(TotalEvents(), 0u);
}

TEST(TraceTest, ConcurrentSpansAreWrittenWithNestingAndThreadNames) {
  testing::ScratchDir dir("trace_concurrent");
  ClearTrace();
  StartTracing();
  constexpr int kThreads = 4;
  constexpr int kIterations = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      SetTraceThreadName("worker \"" + std::to_string(t) + "\"");  // quotes must be escaped
      for (int i = 0; i < kIterations; ++i) {
        SF_TRACE_SCOPE("outer");
        {
          SF_TRACE_SCOPE("inner");
          TraceCounter("depth", i);
        }
        TraceBegin(std::string("manual ") + std::to_string(t));
        TraceInstant("tick");
        TraceEnd();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  StopTracing();
  const std::string path = RankTracePath((dir / "trace.json").string(), 3);
  EXPECT_EQ(path, (dir / "trace.rank3.json").string());
  WriteTrace(path, {.pid = 3});
  const json doc = ReadJson(path);

  ASSERT_TRUE(doc["traceEvents"].is_array());
  EXPECT_EQ(doc["otherData"]["dropped_events"], 0);
  std::map<int, std::string> names;  // tid -> thread name
  std::map<int, std::vector<json>> spans;
  std::map<int, int> begins, ends, counters, instants;
  bool process_named = false;
  for (const json& event : doc["traceEvents"]) {
    EXPECT_EQ(event["pid"], 3);
    const std::string ph = event["ph"];
    const int tid = event["tid"];
    if (ph == "M" && event["name"] == "thread_name") names[tid] = event["args"]["name"];
    if (ph == "M" && event["name"] == "process_name") {
      process_named = event["args"]["name"] == "rank 3";
    }
    if (ph == "X") {
      EXPECT_GE(event["dur"].get<double>(), 0.0);
      EXPECT_GE(event["ts"].get<double>(), 0.0);
      spans[tid].push_back(event);
    }
    if (ph == "B") ++begins[tid];
    if (ph == "E") ++ends[tid];
    if (ph == "C") ++counters[tid];
    if (ph == "i") ++instants[tid];
  }
  EXPECT_TRUE(process_named);
  int workers = 0;
  for (const auto& [tid, name] : names) {
    if (name.rfind("worker \"", 0) != 0) continue;
    ++workers;
    EXPECT_EQ(begins[tid], kIterations) << name;
    EXPECT_EQ(ends[tid], kIterations) << name;
    EXPECT_EQ(counters[tid], kIterations) << name;
    EXPECT_EQ(instants[tid], kIterations) << name;
    std::vector<json> outer, inner;
    for (const json& span : spans[tid]) (span["name"] == "outer" ? outer : inner).push_back(span);
    ASSERT_EQ(outer.size(), static_cast<size_t>(kIterations)) << name;
    ASSERT_EQ(inner.size(), static_cast<size_t>(kIterations)) << name;
    // Each inner span lies inside the outer span of the same iteration (the k-th of each, in
    // time order), and outer spans of one thread do not overlap. Timestamps are rounded to
    // 1 ns, hence the tolerance.
    auto by_ts = [](const json& a, const json& b) { return a["ts"] < b["ts"]; };
    std::sort(outer.begin(), outer.end(), by_ts);
    std::sort(inner.begin(), inner.end(), by_ts);
    constexpr double kEps = 0.002;
    for (int i = 0; i < kIterations; ++i) {
      const double o_start = outer[i]["ts"], o_end = o_start + outer[i]["dur"].get<double>();
      const double i_start = inner[i]["ts"], i_end = i_start + inner[i]["dur"].get<double>();
      EXPECT_LE(o_start, i_start + kEps) << name << " iteration " << i;
      EXPECT_LE(i_end, o_end + kEps) << name << " iteration " << i;
      if (i > 0) {
        const double prev_end =
            outer[i - 1]["ts"].get<double>() + outer[i - 1]["dur"].get<double>();
        EXPECT_LE(prev_end, o_start + kEps) << name << " iteration " << i;
      }
    }
  }
  EXPECT_EQ(workers, kThreads);
  ClearTrace();
}

TEST(TraceTest, NamedScopesInternTheirNamesOnlyWhileTracing) {
  StopTracing();
  ClearTrace();
  const std::string layer = "03_dense";
  { const NamedTraceScope off(layer); }
  EXPECT_EQ(TotalEvents(), 0u);
  // Equal names share one copy, however they are put together.
  EXPECT_EQ(InternTraceName("allreduce_bucket", 2), InternTraceName("allreduce_bucket 2"));
  EXPECT_EQ(InternTraceName("queue ", "prefetch"), InternTraceName("queue prefetch"));
  EXPECT_STREQ(InternTraceName("map", "+batch"), "map+batch");
  StartTracing();
  {
    const NamedTraceScope span(layer);
    const NamedTraceScope bucket("allreduce_bucket", 7);
    const NamedTraceScope pull("prefetch", " pull");
  }
  const int64_t now = MonotonicNanos();
  TraceComplete(InternTraceName("queue wait"), now - 1000, now);
  StopTracing();
  TraceComplete("after", 0, 1);  // off: nothing
  std::map<std::string, int64_t> spans;
  for (const TraceThread& thread : SnapshotTrace()) {
    for (const TraceEvent& e : thread.events) {
      if (e.phase == 'X') spans[e.name] = e.dur_ns;
    }
  }
  ASSERT_EQ(spans.size(), 4u);
  EXPECT_TRUE(spans.count("03_dense") && spans.count("allreduce_bucket 7") &&
              spans.count("prefetch pull"));
  EXPECT_EQ(spans["queue wait"], 1000);
  ClearTrace();
}

TEST(TraceTest, BufferLimitCountsDroppedEvents) {
  ClearTrace();
  const size_t old_limit = TraceBufferLimit();
  SetTraceBufferLimit(10);
  StartTracing();
  std::thread worker([] {
    SetTraceThreadName("limited");
    for (int i = 0; i < 25; ++i) TraceInstant("x");
  });
  worker.join();
  StopTracing();
  SetTraceBufferLimit(old_limit);
  bool found = false;
  for (const TraceThread& thread : SnapshotTrace()) {
    if (thread.name != "limited") continue;
    found = true;
    EXPECT_EQ(thread.events.size(), 10u);
    EXPECT_EQ(thread.dropped, 15u);
  }
  EXPECT_TRUE(found);
  const json doc = json::parse(TraceJson({.pid = 0}));
  EXPECT_EQ(doc["otherData"]["dropped_events"], 15);
  ClearTrace();
}

TEST(TraceTest, MergeKeepsBothPidsAndAlignsOrigins) {
  testing::ScratchDir dir("trace_merge");
  ClearTrace();
  StartTracing();
  { SF_TRACE_SCOPE("step"); }
  StopTracing();
  const std::string rank0 = RankTracePath((dir / "trace.json").string(), 0);
  const std::string rank1 = RankTracePath((dir / "trace.json").string(), 1);
  WriteTrace(rank0, {.pid = 0});
  WriteTrace(rank1, {.pid = 1, .process_name = "chief's peer"});
  ClearTrace();
  const std::string merged_path = (dir / "merged.json").string();
  MergeTraceFiles({rank0, rank1}, merged_path);
  const json merged = ReadJson(merged_path);
  std::map<int, int> spans_per_pid;
  for (const json& event : merged["traceEvents"]) {
    if (event["ph"] == "X") ++spans_per_pid[event["pid"].get<int>()];
  }
  EXPECT_EQ(spans_per_pid[0], 1);
  EXPECT_EQ(spans_per_pid[1], 1);
  EXPECT_EQ(merged["traceEvents"].size(),
            ReadJson(rank0)["traceEvents"].size() + ReadJson(rank1)["traceEvents"].size());

  // Files whose origins differ by 250 us: the later file's events move by 250 us.
  const std::string a = (dir / "a.json").string();
  const std::string b = (dir / "b.json").string();
  std::ofstream(a) << R"({"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":10,"dur":1,"name":"s"}],
                         "otherData":{"wall_origin_us":1000}})";
  std::ofstream(b) << R"({"traceEvents":[{"ph":"X","pid":1,"tid":0,"ts":10,"dur":1,"name":"s"}],
                         "otherData":{"wall_origin_us":1250}})";
  MergeTraceFiles({b, a}, merged_path);
  std::map<int, double> ts;
  const json shifted = ReadJson(merged_path);
  for (const json& event : shifted["traceEvents"]) {
    ts[event["pid"].get<int>()] = event["ts"].get<double>();
  }
  EXPECT_EQ(ts[0], 10.0);
  EXPECT_EQ(ts[1], 260.0);

  EXPECT_THROW(MergeTraceFiles({a, a}, merged_path), Error);  // same pid twice
  const std::string garbage = (dir / "garbage.json").string();
  std::ofstream(garbage) << "{\"traceEvents\": [";
  try {
    MergeTraceFiles({a, garbage}, merged_path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(std::string(e.what()).find("garbage.json"), std::string::npos);
  }
  EXPECT_THROW(MergeTraceFiles({(dir / "missing.json").string()}, merged_path), Error);
}

TEST(TraceTest, RankTracePath) {
  EXPECT_EQ(RankTracePath("trace.json", 0), "trace.rank0.json");
  EXPECT_EQ(RankTracePath("out/run.1/trace", 2), "out/run.1/trace.rank2");
  EXPECT_EQ(RankTracePath("out/.trace", 5), "out/.trace.rank5");
  EXPECT_EQ(RankTracePath("a.b.json", 12), "a.b.rank12.json");
}

// Clock samples (comm/clock_sync.hpp) put every file on rank 0's clock: rank 1's clock reads
// 5 ms ahead at its origin and gains 1 us per ms (1000 ppm); the wall origins are ignored.
TEST(TraceTest, MergeCorrectsClockOffsetAndDrift) {
  testing::ScratchDir dir("trace_merge_clock");
  const std::string a = (dir / "a.json").string();
  const std::string b = (dir / "b.json").string();
  std::ofstream(a) << R"({"traceEvents":[{"ph":"X","pid":0,"tid":0,"ts":10,"dur":1,"name":"s"}],
      "otherData":{"wall_origin_us":1000,"mono_origin_ns":1000000,
      "clock_sync":[{"local_ns":1000000,"offset_ns":0,"error_ns":0}]}})";
  std::ofstream(b)
      << R"({"traceEvents":[{"ph":"X","pid":1,"tid":0,"ts":5000,"dur":1000,"name":"s"}],
      "otherData":{"wall_origin_us":99999,"mono_origin_ns":6000000,
      "clock_sync":[{"local_ns":16000000,"offset_ns":-5010000,"error_ns":3000},
                    {"local_ns":6000000,"offset_ns":-5000000,"error_ns":1000}]}})";
  const std::string merged_path = (dir / "merged.json").string();
  MergeTraceFiles({b, a}, merged_path);
  const json merged = ReadJson(merged_path);
  std::map<int, json> event;
  for (const json& e : merged["traceEvents"]) event[e["pid"].get<int>()] = e;
  EXPECT_NEAR(event[0]["ts"].get<double>(), 10.0, 1e-6);
  // Local 11 ms: offset -5.005 ms, so 5.995 ms on rank 0's clock, 4995 us past the origin.
  EXPECT_NEAR(event[1]["ts"].get<double>(), 4995.0, 1e-6);
  EXPECT_NEAR(event[1]["dur"].get<double>(), 999.0, 1e-6);  // the drift shortens it
  EXPECT_EQ(merged["otherData"]["clock"], "mpi ping-pong against rank 0");
  EXPECT_NEAR(merged["otherData"]["clock_error_us"].get<double>(), 3.0, 1e-9);
}

}  // namespace trace_test
}  // namespace shardflow
