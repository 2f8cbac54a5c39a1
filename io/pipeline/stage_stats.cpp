#include "io/pipeline/stage_stats.hpp"

#include <cstdio>

namespace shardflow::pipeline {

void StageStats::AddBuffered(int64_t elements_delta, int64_t bytes_delta) {
  buffered_elements.fetch_add(elements_delta, std::memory_order_relaxed);
  int64_t now = buffered_bytes.fetch_add(bytes_delta, std::memory_order_relaxed) + bytes_delta;
  int64_t peak = peak_buffered_bytes.load(std::memory_order_relaxed);
  while (now > peak && !peak_buffered_bytes.compare_exchange_weak(peak, now)) {
  }
}

std::shared_ptr<StageStats> PipelineStats::Add(const std::string& name) {
  MutexLock lock(mu_);
  // Stages of the same name aggregate (e.g. the reader of every file an interleave opens).
  for (const auto& s : stages_) {
    if (s->name == name) return s;
  }
  stages_.push_back(std::make_shared<StageStats>(name));
  return stages_.back();
}

std::vector<StageSnapshot> PipelineStats::Snapshot() const {
  MutexLock lock(mu_);
  std::vector<StageSnapshot> out;
  for (const auto& s : stages_) {
    StageSnapshot snap;
    snap.name = s->name;
    snap.elements = s->elements.load();
    snap.bytes = s->bytes.load();
    snap.busy_s = s->busy_ns.load() * 1e-9;
    snap.input_wait_s = s->input_wait_ns.load() * 1e-9;
    snap.output_wait_s = s->output_wait_ns.load() * 1e-9;
    snap.buffered_elements = s->buffered_elements.load();
    snap.buffered_bytes = s->buffered_bytes.load();
    snap.peak_buffered_bytes = s->peak_buffered_bytes.load();
    snap.parallelism = s->parallelism.load();
    out.push_back(snap);
  }
  return out;
}

std::string PipelineStats::Summary() const {
  std::string line;
  for (const auto& s : Snapshot()) {
    char buf[256];
    std::snprintf(buf, sizeof(buf), "%s%s: %lld el %.1f MB busy %.3fs wait %.3fs",
                  line.empty() ? "" : " | ", s.name.c_str(), static_cast<long long>(s.elements),
                  s.bytes / 1e6, s.busy_s, s.input_wait_s);
    line += buf;
    if (s.output_wait_s > 0) {
      std::snprintf(buf, sizeof(buf), " starved %.3fs", s.output_wait_s);
      line += buf;
    }
  }
  return line;
}

}  // namespace shardflow::pipeline
