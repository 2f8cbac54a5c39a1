// Progress of a long loop, printed by rank 0: steps done/total, rates, ETA and live metrics.
//
//   ProgressReporter progress(total_steps, {.label = "train", .unit = "samples"});
//   for (...) {
//     ...
//     progress.SetMetric("loss", loss);
//     progress.Advance(1, batch_size * world_size);   // one step, that many samples
//   }
//   progress.Finish();
//
// Output (stdout by default):
//  - on a terminal (not under mpirun or srun unless SHARDFLOW_PROGRESS=bar; see Mode):
//    one line redrawn in place (carriage return) at most every
//    redraw_interval_seconds, with a bar:
//      train [=========>          ]  45.0% 450/1000 | 8.51 steps/s | 1089 samples/s | ETA 1m04s |
//      loss=0.4512
//  - otherwise (Slurm log files, pipes): a plain line at most every print_interval_seconds,
//    rates measured since the previous line, and a final line from Finish():
//      train: step 450/1000 (45.0%) | 8.51 steps/s | 1089 samples/s | elapsed 53s | ETA 1m04s |
//      loss=0.4512 train: done 1000/1000 steps in 2m01s | 8.26 steps/s | 1057 samples/s |
//      loss=0.4512
// A total <= 0 means unknown: no percentage, bar or ETA. Ranks other than 0 print nothing.
// Rates print with 3 decimals below 1, 2 below 10, 1 below 100, none above (0 as "0");
// metrics with %.4g; durations as 14s, 2m01s, 1h02m03s.
// The clock, the output (fd or stream) and the mode are injectable, so tests check the exact
// text without sleeping. Not thread-safe: one thread drives a reporter.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shardflow {

struct ProgressOptions {
  enum class Mode { kAuto, kTerminal, kPlain };
  static constexpr int kRankFromLogging = -2;

  std::string label = "progress";        // first word of every line, e.g. "train"
  std::string unit;                      // a second rate, e.g. "samples" -> "samples/s"; "" none
  double print_interval_seconds = 30;    // plain mode: at most one line per interval
  double redraw_interval_seconds = 0.2;  // terminal mode: at most one redraw per interval
  double rate_window_seconds = 5;        // terminal mode: rates cover the last 1-2 windows
  int bar_width = 30;
  // kAuto: terminal when there is no stream, isatty(fd), and the process was not started by an
  // MPI or Slurm launcher (whose pseudo-terminal says nothing about where the output goes);
  // SHARDFLOW_PROGRESS=bar or =plain overrides that last part.
  Mode mode = Mode::kAuto;
  int fd = STDOUT_FILENO;
  std::ostream* stream = nullptr;  // when set, output goes here instead of fd
  std::function<double()> clock;   // monotonic seconds; default steady_clock
  int rank = kRankFromLogging;     // only rank <= 0 prints; default GetLogRank()
};

class ProgressReporter {
 public:
  // REQUIRES: options.stream, if set, outlives the reporter.
  explicit ProgressReporter(int64_t total_steps, ProgressOptions options = {});
  // Ends a terminal line left open (e.g. when an exception leaves the loop). Does not Finish().
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Adds `steps` steps and `units` units (samples, bytes) of work; may print.
  void Advance(int64_t steps = 1, double units = 0);
  // Sets the totals done so far (absolute, counted in the rates); may print.
  void Set(int64_t steps_done, double units_done);
  // The loop resumes with this much already done (e.g. from a checkpoint): rates and ETA count
  // only the work done from here. Call before the first Advance/Set. Prints nothing.
  void StartAt(int64_t steps_done, double units_done = 0);
  // A metric shown on every line from now on as name=value, in the order first set.
  void SetMetric(std::string_view name, double value);
  // Prints the final line (ends the terminal line). Later calls do nothing.
  void Finish();

  bool active() const { return active_; }  // whether this rank prints
  bool terminal() const { return terminal_; }
  int64_t steps_done() const { return steps_; }

 private:
  double Now() const;
  void MaybePrint();
  std::string PlainLine(double now) const;
  std::string TerminalLine(double now, bool final) const;
  std::string FinalLine(double now) const;
  std::string RateText(double steps_per_s, double units_per_s) const;
  std::string MetricsText() const;
  void Emit(const std::string& text);

  ProgressOptions options_;
  int64_t total_;
  bool active_ = false;
  bool terminal_ = false;
  bool finished_ = false;
  bool line_open_ = false;  // terminal mode: a line is drawn without its newline
  int terminal_columns_ = 0;
  double start_ = 0;
  int64_t steps_ = 0;
  double units_ = 0;
  int64_t start_steps_ = 0;  // StartAt
  double start_units_ = 0;
  // Where the current rate measurement starts (plain: the last line; terminal: see .cpp).
  double window_time_ = 0;
  int64_t window_steps_ = 0;
  double window_units_ = 0;
  double next_window_time_ = 0;
  int64_t next_window_steps_ = 0;
  double next_window_units_ = 0;
  double last_output_ = 0;
  std::vector<std::pair<std::string, double>> metrics_;
};

// "14s", "2m01s", "1h02m03s"; "?" for a negative or non-finite time.
std::string FormatDuration(double seconds);

}  // namespace shardflow
