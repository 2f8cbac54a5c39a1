#include "core/logging.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

#include "core/environment.hpp"
#include "core/error.hpp"

namespace shardflow {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_rank{-1};
std::atomic<int> g_fd{STDERR_FILENO};
const auto g_start = std::chrono::steady_clock::now();

}  // namespace

LogLevel ParseLogLevel(const std::string& text) {
  std::string t = text;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "error") return LogLevel::kError;
  if (t == "warn" || t == "warning") return LogLevel::kWarn;
  if (t == "info") return LogLevel::kInfo;
  if (t == "debug") return LogLevel::kDebug;
  throw Error(ErrorCode::kInvalidArgument, "unknown log level '" + text + "'",
              {.hint = "use one of error, warn, info, debug"});
}

const char* LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kError:
      return "error";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kDebug:
      return "debug";
  }
  return "?";
}

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }
bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}
void SetLogRank(int rank) { g_rank.store(rank); }
int GetLogRank() { return g_rank.load(std::memory_order_relaxed); }
void SetLogFileDescriptor(int fd) { g_fd.store(fd); }

void SetLogFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw Error(ErrorCode::kIo, std::string("cannot open log file: ") + std::strerror(errno),
                {.file = path});
  }
  const int old = g_fd.exchange(fd);
  if (old != STDERR_FILENO && old != STDOUT_FILENO) ::close(old);
}

void InitLoggingFromEnvironment() {
  if (const std::optional<std::string> file = env::Text("SHARDFLOW_LOG_FILE")) SetLogFile(*file);
  const std::optional<std::string> value = env::Text("SHARDFLOW_LOG_LEVEL");
  if (!value) return;
  try {
    SetLogLevel(ParseLogLevel(*value));
  } catch (const Error& e) {
    throw Error(ErrorCode::kInvalidArgument, e.status().message(),
                {.key = "SHARDFLOW_LOG_LEVEL", .hint = e.context().hint});
  }
}

LogLine::LogLine(LogLevel level) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - g_start).count();
  char prefix[64];
  const int rank = GetLogRank();
  const char letter = "EWID"[static_cast<int>(level)];
  if (rank >= 0) {
    std::snprintf(prefix, sizeof(prefix), "[r%d %c %.3f] ", rank, letter, seconds);
  } else {
    std::snprintf(prefix, sizeof(prefix), "[%c %.3f] ", letter, seconds);
  }
  out_ << prefix;
}

LogLine::~LogLine() {
  out_ << '\n';
  const std::string line = out_.str();
  const int fd = g_fd.load();
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
    if (n <= 0) break;  // nowhere to report a failure to log
    done += static_cast<size_t>(n);
  }
}

bool FirstTimeInProcess(const std::string& key) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  const std::lock_guard<std::mutex> lock(mutex);
  return seen.insert(key).second;
}

}  // namespace shardflow
