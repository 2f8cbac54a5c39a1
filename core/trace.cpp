#include "core/trace.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>  // std::once_flag
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow {

namespace trace_detail {
std::atomic<bool> g_enabled{false};
}  // namespace trace_detail

namespace {

// The compact form of an event in a thread's buffer: 32 bytes, no ownership.
struct RawEvent {
  const char* name;  // static storage, or a string in ThreadBuffer::names
  int64_t ts_ns;
  union {
    int64_t dur_ns;  // 'X'
    double value;    // 'C'
  };
  char phase;
};

// One thread's events. Only the owning thread appends; SnapshotTrace and ClearTrace take the
// same mutex, so the owner's lock is uncontended except while a snapshot copies its events.
// Events live in fixed-size chunks: an append never moves earlier events (no vector doubling
// and copying on the hot path), and a chunk is one allocation per 4096 events.
struct ThreadBuffer {
  static constexpr size_t kChunkEvents = 4096;
  explicit ThreadBuffer(int thread_id)
      : tid(thread_id), name("thread " + std::to_string(thread_id)) {}

  const int tid;
  Mutex mu;
  std::string name GUARDED_BY(mu);
  std::vector<std::unique_ptr<RawEvent[]>> chunks GUARDED_BY(mu);
  size_t size GUARDED_BY(mu) = 0;
  std::deque<std::string> names GUARDED_BY(mu);  // dynamic names; a deque never moves them
  uint64_t dropped GUARDED_BY(mu) = 0;

  void Push(const RawEvent& event) REQUIRES(mu) {
    if (size == chunks.size() * kChunkEvents) {
      chunks.push_back(std::make_unique_for_overwrite<RawEvent[]>(kChunkEvents));
    }
    chunks[size / kChunkEvents][size % kChunkEvents] = event;
    ++size;
  }
  const RawEvent& At(size_t i) const REQUIRES(mu) {
    return chunks[i / kChunkEvents][i % kChunkEvents];
  }
  void Clear() REQUIRES(mu) {
    chunks.clear();
    names.clear();
    size = 0;
    dropped = 0;
  }
};

struct Registry {
  Mutex mu;  // taken before any ThreadBuffer::mu
  std::vector<std::shared_ptr<ThreadBuffer>> threads GUARDED_BY(mu);  // index == tid
  std::atomic<size_t> limit{size_t{1} << 20};
  std::once_flag origin_once;
  std::atomic<int64_t> origin_ns{0};  // set once, before g_enabled first becomes true
  std::atomic<int64_t> wall_origin_us{0};
};

// Never destroyed: threads may record (and thread_local buffers be released) during exit.
Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

ThreadBuffer& LocalBuffer() {
  thread_local std::shared_ptr<ThreadBuffer> buffer = [] {
    Registry& registry = GetRegistry();
    MutexLock lock(registry.mu);
    auto created = std::make_shared<ThreadBuffer>(static_cast<int>(registry.threads.size()));
    registry.threads.push_back(created);
    return created;
  }();
  return *buffer;
}

// Appends an event named by `name`, a static string, or, when `copy` is non-null, by a name
// the buffer keeps a copy of.
void AppendEvent(char phase, const char* name, std::string* copy, int64_t ts_ns, int64_t dur_ns,
                 double value) {
  ThreadBuffer& buffer = LocalBuffer();
  const size_t limit = GetRegistry().limit.load(std::memory_order_relaxed);
  MutexLock lock(buffer.mu);
  if (buffer.size >= limit) {
    ++buffer.dropped;
    return;
  }
  if (copy != nullptr) {
    buffer.names.push_back(std::move(*copy));
    name = buffer.names.back().c_str();
  }
  RawEvent event;
  event.name = name;
  event.ts_ns = ts_ns;
  if (phase == 'C') {
    event.value = value;
  } else {
    event.dur_ns = dur_ns;
  }
  event.phase = phase;
  buffer.Push(event);
}

void Append(char phase, const char* name, int64_t ts_ns, int64_t dur_ns = 0, double value = 0) {
  AppendEvent(phase, name, nullptr, ts_ns, dur_ns, value);
}

void AppendDynamic(char phase, std::string name, int64_t ts_ns, int64_t dur_ns = 0) {
  AppendEvent(phase, nullptr, &name, ts_ns, dur_ns, 0);
}

void AppendJsonString(std::string* out, std::string_view text) {
  out->push_back('"');
  for (const char c : text) {
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          *out += escaped;
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    throw Error(ErrorCode::kIo, std::string("cannot write trace: ") + std::strerror(errno),
                {.file = path});
  }
}

}  // namespace

void StartTracing() {
  Registry& registry = GetRegistry();
  std::call_once(registry.origin_once, [&] {
    registry.origin_ns.store(MonotonicNanos());
    registry.wall_origin_us.store(std::chrono::duration_cast<std::chrono::microseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
  });
  trace_detail::g_enabled.store(true, std::memory_order_release);
}

void StopTracing() { trace_detail::g_enabled.store(false, std::memory_order_release); }

void ClearTrace() {
  Registry& registry = GetRegistry();
  MutexLock lock(registry.mu);
  for (const auto& thread : registry.threads) {
    MutexLock thread_lock(thread->mu);
    thread->Clear();
  }
}

void SetTraceBufferLimit(size_t max_events_per_thread) {
  GetRegistry().limit.store(max_events_per_thread);
}
size_t TraceBufferLimit() { return GetRegistry().limit.load(); }

void SetTraceThreadName(std::string name) {
  ThreadBuffer& buffer = LocalBuffer();
  MutexLock lock(buffer.mu);
  buffer.name = std::move(name);
}

void TraceBegin(const char* name) {
  if (!TracingEnabled()) return;
  Append('B', name, MonotonicNanos());
}

void TraceBegin(std::string name) {
  if (!TracingEnabled()) return;
  AppendDynamic('B', std::move(name), MonotonicNanos());
}

void TraceEnd() {
  if (!TracingEnabled()) return;
  Append('E', "", MonotonicNanos());
}

void TraceCounter(const char* name, double value) {
  if (!TracingEnabled()) return;
  Append('C', name, MonotonicNanos(), 0, value);
}

void TraceInstant(const char* name) {
  if (!TracingEnabled()) return;
  Append('i', name, MonotonicNanos());
}

const char* InternTraceName(std::string_view name, std::string_view suffix) {
  struct Names {
    Mutex mu;
    std::set<std::string, std::less<>> set GUARDED_BY(mu);  // nodes never move
  };
  static Names* names = new Names;  // never destroyed, like the registry
  std::string key;
  key.reserve(name.size() + suffix.size());
  key.append(name).append(suffix);
  MutexLock lock(names->mu);
  return names->set.insert(std::move(key)).first->c_str();
}

const char* InternTraceName(std::string_view name, int index) {
  std::string suffix(1, ' ');
  suffix += std::to_string(index);
  return InternTraceName(name, suffix);
}

void TraceComplete(const char* name, int64_t start_ns, int64_t end_ns) {
  if (!TracingEnabled()) return;
  Append('X', name, start_ns, end_ns - start_ns);
}

void TraceScope::Finish() {
  const int64_t end = MonotonicNanos();
  if (name_ != nullptr) {
    Append('X', name_, start_ns_, end - start_ns_);
  } else {
    AppendDynamic('X', std::move(dynamic_name_), start_ns_, end - start_ns_);
  }
}

std::vector<TraceThread> SnapshotTrace() {
  Registry& registry = GetRegistry();
  std::vector<std::shared_ptr<ThreadBuffer>> threads;
  {
    MutexLock lock(registry.mu);
    threads = registry.threads;
  }
  std::vector<TraceThread> snapshot;
  snapshot.reserve(threads.size());
  for (const auto& thread : threads) {
    MutexLock lock(thread->mu);
    TraceThread copy{thread->tid, thread->name, {}, thread->dropped};
    copy.events.reserve(thread->size);
    for (size_t i = 0; i < thread->size; ++i) {
      const RawEvent& raw = thread->At(i);
      TraceEvent event{.phase = raw.phase, .name = raw.name, .ts_ns = raw.ts_ns};
      if (raw.phase == 'C') {
        event.value = raw.value;
      } else if (raw.phase == 'X') {
        event.dur_ns = raw.dur_ns;
      }
      copy.events.push_back(std::move(event));
    }
    snapshot.push_back(std::move(copy));
  }
  return snapshot;
}

std::string TraceJson(const TraceWriteOptions& options) {
  const Registry& registry = GetRegistry();
  const int64_t origin_ns = registry.origin_ns.load();
  const std::vector<TraceThread> threads = SnapshotTrace();
  const std::string pid = std::to_string(options.pid);
  std::string out = "{\"traceEvents\":[\n";
  out +=
      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + pid + ",\"tid\":0,\"args\":{\"name\":";
  AppendJsonString(&out, options.process_name.empty() ? "rank " + pid : options.process_name);
  out += "}}";
  uint64_t dropped = 0;
  char number[64];
  for (const TraceThread& thread : threads) {
    dropped += thread.dropped;
    const std::string head = ",\n{\"pid\":" + pid + ",\"tid\":" + std::to_string(thread.tid);
    out += head + ",\"ph\":\"M\",\"name\":\"thread_name\",\"args\":{\"name\":";
    AppendJsonString(&out, thread.name);
    out += "}}";
    out += head + ",\"ph\":\"M\",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" +
           std::to_string(thread.tid) + "}}";
    for (const TraceEvent& event : thread.events) {
      out += head + ",\"ph\":\"";
      out.push_back(event.phase);
      std::snprintf(number, sizeof(number), "\",\"ts\":%.3f",
                    static_cast<double>(event.ts_ns - origin_ns) * 1e-3);
      out += number;
      if (event.phase != 'E') {
        out += ",\"name\":";
        AppendJsonString(&out, event.name);
      }
      if (event.phase == 'X') {
        std::snprintf(number, sizeof(number), ",\"dur\":%.3f",
                      static_cast<double>(event.dur_ns) * 1e-3);
        out += number;
      } else if (event.phase == 'C') {
        std::snprintf(number, sizeof(number), "%.17g", event.value);
        out += ",\"args\":{\"value\":" + std::string(number) + "}";
      } else if (event.phase == 'i') {
        out += ",\"s\":\"t\"";
      }
      out += "}";
    }
  }
  out += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"pid\":" + pid +
         ",\"wall_origin_us\":" + std::to_string(registry.wall_origin_us.load()) +
         ",\"mono_origin_ns\":" + std::to_string(origin_ns) +
         ",\"dropped_events\":" + std::to_string(dropped) + ",\"clock_sync\":[";
  for (size_t i = 0; i < options.clock_samples.size(); ++i) {
    const TraceClockSample& c = options.clock_samples[i];
    out += (i == 0 ? std::string() : std::string(",")) +
           "{\"local_ns\":" + std::to_string(c.local_ns) +
           ",\"offset_ns\":" + std::to_string(c.offset_ns) +
           ",\"error_ns\":" + std::to_string(c.error_ns) + "}";
  }
  out += "]}}\n";
  return out;
}

void WriteTrace(const std::string& path, const TraceWriteOptions& options) {
  WriteFile(path, TraceJson(options));
}

std::string RankTracePath(const std::string& path, int rank) {
  const std::string tag = ".rank" + std::to_string(rank);
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) ||
      dot == (slash == std::string::npos ? 0 : slash + 1)) {
    return path + tag;
  }
  return path.substr(0, dot) + tag + path.substr(dot);
}

}  // namespace shardflow
