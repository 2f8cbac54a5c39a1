// Tracing: named spans, counters and instants recorded per thread, written as Chrome
// trace-event JSON (chrome://tracing, ui.perfetto.dev), one file per rank, mergeable into one.
//
//   StartTracing();                          // off by default
//   { SF_TRACE_SCOPE("forward"); ... }       // a complete event ("ph":"X") for the scope
//   TraceBegin("allreduce"); ...; TraceEnd(); // "B"/"E" pair, on the same thread
//   TraceCounter("queue_depth", 12);         // "C"
//   SetTraceThreadName("comm");              // thread_name metadata for this thread
//   WriteTrace(RankTracePath("trace.json", rank), {.pid = rank});   // trace.rank3.json
//   MergeTraceFiles({"trace.rank0.json", "trace.rank1.json"}, "trace.json");  // offline
//
// Cost: when tracing is off every call is one relaxed atomic load and a branch. When on, an event
// is two clock reads and an append to the calling thread's own buffer under that thread's own
// mutex, which only the writer ever contends for: no global lock on the hot path (the global
// registry lock is taken once per thread, at its first event).
// Names: `const char*` names must have static storage (string literals) or be interned
// (InternTraceName, NamedTraceScope: names made at run time); the std::string overloads copy the
// name (an allocation for names over 15 bytes).
// Memory: each thread keeps at most TraceBufferLimit() events (default 1M, 32 MiB, in 128 KiB
// chunks so that recording never moves what is recorded, plus copies of dynamic names); further
// events are counted as dropped, and the count is written into the trace ("dropped_events").
// Timestamps: monotonic nanoseconds, written in microseconds relative to the first
// StartTracing(); each file records the wall-clock time of that origin, and MergeTraceFiles
// aligns ranks by it (exact on one node; across nodes as good as the clocks' sync). A file may
// also carry clock samples measured against rank 0 (comm/clock_sync.hpp, at the start and end
// of a run): when every input has them, MergeTraceFiles puts each rank on rank 0's clock
// instead, with the drift between the samples corrected (linear), and records the largest
// measurement error ("clock_error_us").
// Thread-safety: every function may be called from any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/timer.hpp"

namespace shardflow {

namespace trace_detail {
extern std::atomic<bool> g_enabled;
}  // namespace trace_detail

inline bool TracingEnabled() { return trace_detail::g_enabled.load(std::memory_order_relaxed); }
void StartTracing();
void StopTracing();
// Discards the events recorded so far by every thread (threads keep their ids and names).
void ClearTrace();
void SetTraceBufferLimit(size_t max_events_per_thread);
size_t TraceBufferLimit();

// Names the calling thread in the trace (default "thread N"). Works while tracing is off.
void SetTraceThreadName(std::string name);

void TraceBegin(const char* name);
void TraceBegin(std::string name);
void TraceEnd();
void TraceCounter(const char* name, double value);
void TraceInstant(const char* name);

// Names made at run time (a layer's, a pipeline stage's, a bucket's), interned: one copy per
// distinct name for the life of the process, so events name them without a copy each. Returns
// a pointer that stays valid to the end of the process; "" + suffix, or name + " " + index.
const char* InternTraceName(std::string_view name, std::string_view suffix = {});
const char* InternTraceName(std::string_view name, int index);

// A complete event of [start_ns, end_ns) (MonotonicNanos()) on the calling thread; `name` as
// for TraceCounter (static storage or interned). Nothing when tracing is off.
void TraceComplete(const char* name, int64_t start_ns, int64_t end_ns);

// One recorded event, as returned by SnapshotTrace (the buffers hold a compact form).
struct TraceEvent {
  char phase = 'X';    // 'X' complete, 'B' begin, 'E' end, 'C' counter, 'i' instant
  std::string name;    // empty for 'E'
  int64_t ts_ns = 0;   // MonotonicNanos() at the start
  int64_t dur_ns = 0;  // 'X' only
  double value = 0;    // 'C' only
};

// The events of one thread, as returned by SnapshotTrace.
struct TraceThread {
  int tid = 0;  // small index in order of first use: 0, 1, 2, ...
  std::string name;
  std::vector<TraceEvent> events;  // in the order they were recorded (an 'X' at its end)
  uint64_t dropped = 0;
};

// A copy of everything recorded so far, threads in tid order.
std::vector<TraceThread> SnapshotTrace();

// Records the lifetime of a scope as a complete event, if tracing is on when it starts.
class TraceScope {
 public:
  explicit TraceScope(const char* name)
      : name_(name), start_ns_(TracingEnabled() ? MonotonicNanos() : -1) {}
  explicit TraceScope(std::string name)
      : dynamic_name_(std::move(name)), start_ns_(TracingEnabled() ? MonotonicNanos() : -1) {}
  ~TraceScope() {
    if (start_ns_ >= 0) Finish();
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  void Finish();
  const char* name_ = nullptr;
  std::string dynamic_name_;
  int64_t start_ns_;
};

// A TraceScope named at run time: the name is interned at the start only when tracing is on,
// so while it is off the scope costs what a TraceScope does (a relaxed load and a branch).
//   NamedTraceScope span(layer_name);                  // "03_dense"
//   NamedTraceScope span("allreduce_bucket", index);   // "allreduce_bucket 2"
class NamedTraceScope {
 public:
  explicit NamedTraceScope(std::string_view name, std::string_view suffix = {})
      : start_ns_(TracingEnabled() ? MonotonicNanos() : -1) {
    if (start_ns_ >= 0) name_ = InternTraceName(name, suffix);
  }
  NamedTraceScope(std::string_view name, int index)
      : start_ns_(TracingEnabled() ? MonotonicNanos() : -1) {
    if (start_ns_ >= 0) name_ = InternTraceName(name, index);
  }
  ~NamedTraceScope() {
    if (start_ns_ >= 0) TraceComplete(name_, start_ns_, MonotonicNanos());
  }
  NamedTraceScope(const NamedTraceScope&) = delete;
  NamedTraceScope& operator=(const NamedTraceScope&) = delete;

 private:
  const char* name_ = nullptr;
  int64_t start_ns_;
};

#define SF_TRACE_CONCAT_INNER(a, b) a##b
#define SF_TRACE_CONCAT(a, b) SF_TRACE_CONCAT_INNER(a, b)
#define SF_TRACE_SCOPE(name) \
  ::shardflow::TraceScope SF_TRACE_CONCAT(sf_trace_scope_, __LINE__)(name)

// Rank 0's monotonic clock minus this process's at local_ns, within error_ns.
struct TraceClockSample {
  int64_t local_ns = 0;
  int64_t offset_ns = 0;
  int64_t error_ns = 0;
};

struct TraceWriteOptions {
  int pid = 0;                                  // the rank
  std::string process_name;                     // default "rank <pid>"
  std::vector<TraceClockSample> clock_samples;  // written as otherData.clock_sync
};

// The Chrome trace JSON of SnapshotTrace(): {"traceEvents": [...], "displayTimeUnit": "ms",
// "otherData": {"wall_origin_us": ..., "mono_origin_ns": ..., "dropped_events": ...,
// "clock_sync": [{"local_ns", "offset_ns", "error_ns"}...]}}, with process_name and
// thread_name metadata events.
std::string TraceJson(const TraceWriteOptions& options);
// Writes TraceJson to `path`. Throws Error(kIo) naming the file.
void WriteTrace(const std::string& path, const TraceWriteOptions& options);
// "dir/trace.json" -> "dir/trace.rank3.json" (".rank3" appended when there is no extension).
std::string RankTracePath(const std::string& path, int rank);
// Merges per-rank trace files into one, shifting each file's timestamps so that all share the
// earliest file's origin (by wall clock, or by the clock samples when every file has them). Throws
// Error(kNotFound / kDataLoss) naming the input that cannot be read or is not a trace,
// Error(kInvalidArgument) when two inputs use the same pid, Error(kIo) when the output cannot be
// written.
void MergeTraceFiles(const std::vector<std::string>& inputs, const std::string& output);

}  // namespace shardflow
