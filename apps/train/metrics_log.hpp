// MetricsLog: metrics.jsonl, one JSON object a line, appended (a resumed run continues the
// file). Resumed at `resumed_step` > 0, the lines of steps past it (written after the
// checkpoint by a run that was then killed) are dropped first, so every step has one line.
// An empty path writes nothing. Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

namespace shardflow::train {

class MetricsLog {
 public:
  explicit MetricsLog(const std::string& path, int64_t resumed_step = 0);
  void Write(const nlohmann::json& line) {
    if (out_.is_open()) out_ << line.dump() << '\n' << std::flush;
  }
  static void DropLinesAfter(const std::string& path, int64_t step);

 private:
  std::ofstream out_;
};

}  // namespace shardflow::train
