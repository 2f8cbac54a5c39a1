#include "core/progress.hpp"

#include <sys/ioctl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/environment.hpp"
#include "core/logging.hpp"

namespace shardflow {
namespace {

// Under mpirun (and srun --pty) a rank's stdout is a pseudo-terminal the launcher made, even
// when the launcher's own output goes to a file: isatty() says yes either way. So a rank started
// by a launcher draws the bar only when SHARDFLOW_PROGRESS=bar asks for it, and prints plain
// lines otherwise; SHARDFLOW_PROGRESS=plain forces plain lines everywhere.
bool UnderLauncher() {
  const std::string choice = env::Choice("SHARDFLOW_PROGRESS", "auto", {"auto", "bar", "plain"});
  if (choice == "bar") return false;
  if (choice == "plain") return true;
  for (const char* name : {"PMIX_RANK", "PMI_SIZE", "SLURM_STEP_ID"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Decimals by magnitude: 0, 0.125, 8.51, 85.1, 1089.
std::string FormatRate(double rate) {
  if (rate == 0) return "0";
  char buffer[64];
  const double magnitude = std::fabs(rate);
  const int decimals = magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : 3;
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, rate);
  return buffer;
}

std::string Percent(int64_t done, int64_t total) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f%%",
                100.0 * static_cast<double>(done) / static_cast<double>(total));
  return buffer;
}

}  // namespace

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<int64_t>(seconds);
  const int64_t h = total / 3600;
  const int64_t m = (total / 60) % 60;
  const int64_t s = total % 60;
  char buffer[64];
  if (h > 0) {
    std::snprintf(buffer, sizeof(buffer), "%lldh%02lldm%02llds", static_cast<long long>(h),
                  static_cast<long long>(m), static_cast<long long>(s));
  } else if (m > 0) {
    std::snprintf(buffer, sizeof(buffer), "%lldm%02llds", static_cast<long long>(m),
                  static_cast<long long>(s));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%llds", static_cast<long long>(s));
  }
  return buffer;
}

ProgressReporter::ProgressReporter(int64_t total_steps, ProgressOptions options)
    : options_(std::move(options)), total_(total_steps) {
  const int rank =
      options_.rank == ProgressOptions::kRankFromLogging ? GetLogRank() : options_.rank;
  active_ = rank <= 0;
  switch (options_.mode) {
    case ProgressOptions::Mode::kTerminal:
      terminal_ = true;
      break;
    case ProgressOptions::Mode::kPlain:
      terminal_ = false;
      break;
    case ProgressOptions::Mode::kAuto:
      terminal_ = options_.stream == nullptr && ::isatty(options_.fd) == 1 && !UnderLauncher();
      break;
  }
  if (terminal_ && options_.stream == nullptr) {
    struct winsize size {};
    if (::ioctl(options_.fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) {
      terminal_columns_ = size.ws_col;
    }
  }
  start_ = Now();
  window_time_ = next_window_time_ = last_output_ = start_;
}

ProgressReporter::~ProgressReporter() {
  if (line_open_) Emit("\n");
}

double ProgressReporter::Now() const { return options_.clock ? options_.clock() : SteadySeconds(); }

void ProgressReporter::Advance(int64_t steps, double units) { Set(steps_ + steps, units_ + units); }

void ProgressReporter::Set(int64_t steps_done, double units_done) {
  if (finished_) return;
  steps_ = steps_done;
  units_ = units_done;
  MaybePrint();
}

void ProgressReporter::StartAt(int64_t steps_done, double units_done) {
  steps_ = start_steps_ = window_steps_ = next_window_steps_ = steps_done;
  units_ = start_units_ = window_units_ = next_window_units_ = units_done;
}

void ProgressReporter::SetMetric(std::string_view name, double value) {
  for (auto& [metric, current] : metrics_) {
    if (metric == name) {
      current = value;
      return;
    }
  }
  metrics_.emplace_back(std::string(name), value);
}

void ProgressReporter::MaybePrint() {
  if (!active_) return;
  const double now = Now();
  if (!terminal_) {
    if (now - last_output_ < options_.print_interval_seconds) return;
    Emit(PlainLine(now));
    // The next line's rates cover the time since this one.
    window_time_ = now;
    window_steps_ = steps_;
    window_units_ = units_;
    last_output_ = now;
    return;
  }
  // Terminal: rates cover [window, now] where the window start trails `now` by one to two
  // rate windows, so they follow speed changes without jumping at every redraw.
  if (now - next_window_time_ >= options_.rate_window_seconds) {
    window_time_ = next_window_time_;
    window_steps_ = next_window_steps_;
    window_units_ = next_window_units_;
    next_window_time_ = now;
    next_window_steps_ = steps_;
    next_window_units_ = units_;
  }
  if (line_open_ && now - last_output_ < options_.redraw_interval_seconds) return;
  Emit(TerminalLine(now, /*final=*/false));
  line_open_ = true;
  last_output_ = now;
}

void ProgressReporter::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!active_) return;
  const double now = Now();
  if (terminal_) {
    Emit(TerminalLine(now, /*final=*/true) + "\n");
    line_open_ = false;
  } else {
    Emit(FinalLine(now));
  }
}

std::string ProgressReporter::RateText(double steps_per_s, double units_per_s) const {
  std::string text = FormatRate(steps_per_s) + " steps/s";
  if (!options_.unit.empty()) text += " | " + FormatRate(units_per_s) + " " + options_.unit + "/s";
  return text;
}

std::string ProgressReporter::MetricsText() const {
  std::string text;
  char buffer[64];
  for (const auto& [name, value] : metrics_) {
    std::snprintf(buffer, sizeof(buffer), "%.4g", value);
    text += " | " + name + "=" + buffer;
  }
  return text;
}

std::string ProgressReporter::PlainLine(double now) const {
  const double window = now - window_time_;
  const double step_rate = window > 0 ? static_cast<double>(steps_ - window_steps_) / window : 0.0;
  const double unit_rate = window > 0 ? (units_ - window_units_) / window : 0.0;
  std::string line = options_.label + ": step " + std::to_string(steps_);
  if (total_ > 0) line.append("/").append(std::to_string(total_)).append(" (");
  if (total_ > 0) line.append(Percent(steps_, total_)).append(")");
  line.append(" | ").append(RateText(step_rate, unit_rate));
  line.append(" | elapsed ").append(FormatDuration(now - start_));
  if (total_ > 0) {
    const double eta =
        step_rate > 0 ? static_cast<double>(std::max<int64_t>(total_ - steps_, 0)) / step_rate : -1;
    line.append(" | ETA ").append(FormatDuration(eta));
  }
  return line.append(MetricsText()).append("\n");
}

std::string ProgressReporter::FinalLine(double now) const {
  const double elapsed = now - start_;
  const double step_rate = elapsed > 0 ? static_cast<double>(steps_ - start_steps_) / elapsed : 0.0;
  const double unit_rate = elapsed > 0 ? (units_ - start_units_) / elapsed : 0.0;
  // A run that ends short of its planned steps (a stop signal, an error) says so.
  const bool short_of_plan = total_ > 0 && steps_ < total_;
  std::string line =
      options_.label + (short_of_plan ? ": stopped at " : ": done ") + std::to_string(steps_);
  if (total_ > 0) line.append("/").append(std::to_string(total_));
  line.append(" steps in ").append(FormatDuration(elapsed));
  line.append(" | ").append(RateText(step_rate, unit_rate));
  return line.append(MetricsText()).append("\n");
}

std::string ProgressReporter::TerminalLine(double now, bool final) const {
  // The final line reports averages over the whole run; live lines the recent window.
  const double since = final ? start_ : window_time_;
  const int64_t steps_before = final ? start_steps_ : window_steps_;
  const double units_before = final ? start_units_ : window_units_;
  const double window = now - since;
  const double step_rate = window > 0 ? static_cast<double>(steps_ - steps_before) / window : 0.0;
  const double unit_rate = window > 0 ? (units_ - units_before) / window : 0.0;
  std::string line = "\r";
  line.append(options_.label);
  if (total_ > 0) {
    const double fraction =
        std::clamp(static_cast<double>(steps_) / static_cast<double>(total_), 0.0, 1.0);
    const int width = std::max(options_.bar_width, 1);
    const int filled = static_cast<int>(fraction * width);
    std::string bar(static_cast<size_t>(width), ' ');
    std::fill_n(bar.begin(), filled, '=');
    if (filled < width) bar[static_cast<size_t>(filled)] = '>';
    char percent[16];
    std::snprintf(percent, sizeof(percent), "%5.1f%%", 100.0 * fraction);
    line.append(" [").append(bar).append("] ").append(percent).append(" ");
    line.append(std::to_string(steps_)).append("/").append(std::to_string(total_));
  } else {
    line.append(" ").append(std::to_string(steps_)).append(" steps");
  }
  line.append(" | ").append(RateText(step_rate, unit_rate));
  if (final) {
    line.append(" | ").append(FormatDuration(now - start_));
  } else if (total_ > 0) {
    const double eta =
        step_rate > 0 ? static_cast<double>(std::max<int64_t>(total_ - steps_, 0)) / step_rate : -1;
    line.append(" | ETA ").append(FormatDuration(eta));
  }
  line.append(MetricsText());
  // Keep to one terminal row, or the carriage return cannot redraw it.
  if (terminal_columns_ > 1 && line.size() > static_cast<size_t>(terminal_columns_)) {
    line.resize(static_cast<size_t>(terminal_columns_));  // "\r" takes no column
  }
  return line.append("\x1b[K");  // erase what is left of a longer previous line
}

void ProgressReporter::Emit(const std::string& text) {
  if (options_.stream != nullptr) {
    *options_.stream << text << std::flush;
    return;
  }
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(options_.fd, text.data() + done, text.size() - done);
    if (n <= 0) return;  // output closed: progress is best-effort
    done += static_cast<size_t>(n);
  }
}

}  // namespace shardflow
