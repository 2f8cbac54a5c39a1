// Logging: levels, a rank prefix, whole lines only.
//
//   SF_LOG(Info) << "read " << n << " records";   // every rank
//   SF_LOG0(Warn) << "shuffle buffer is small";   // rank 0 only
//
// A line is built in memory and written with one write(2), so lines from the threads of a
// process never interleave. Across ranks:
//  - SHARDFLOW_LOG_FILE=PATH (or SetLogFile): every rank appends to PATH opened with O_APPEND,
//    one write per line, so lines of all ranks land whole in one file (on a local or
//    POSIX-consistent file system).
//  - stderr under mpirun: OpenMPI's daemons forward each rank's stderr in 4 KiB reads, which can
//    cut a line in a heavy burst and interleave it with another rank's. Use a log file, or
//    `mpirun --output-filename DIR` for one file per rank, when every line must stay whole.
// Format: "[r3 I 12.345] message" — rank, level letter, seconds since the process started.
// The level comes from SetLogLevel() (the [log] level config key) or the environment variable
// SHARDFLOW_LOG_LEVEL = error | warn | info | debug (default info).
#pragma once

#include <sstream>
#include <string>

namespace shardflow {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

// "error" | "warn" | "info" | "debug" (case-insensitive); throws Error(kInvalidArgument).
LogLevel ParseLogLevel(const std::string& text);
const char* LogLevelName(LogLevel level);

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
bool LogEnabled(LogLevel level);

// The rank printed in the prefix (-1: none). MpiEnvironment sets it.
// Whether this process has not seen `key` before (a log line said once per process, e.g. a
// pipeline rebuilt every epoch alike). Thread-safe.
bool FirstTimeInProcess(const std::string& key);

void SetLogRank(int rank);
int GetLogRank();

// Applies SHARDFLOW_LOG_FILE and SHARDFLOW_LOG_LEVEL if set; an invalid value is an error
// naming the variable.
void InitLoggingFromEnvironment();

// Where lines go (default stderr).
void SetLogFileDescriptor(int fd);
// Appends lines to PATH (created if needed). Throws Error(kIo) naming the file.
void SetLogFile(const std::string& path);

// One log line; written whole when destroyed.
class LogLine {
 public:
  explicit LogLine(LogLevel level);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  std::ostream& stream() { return out_; }

 private:
  std::ostringstream out_;
};

}  // namespace shardflow

// `cond ? (void)0 : Voidify() & stream` keeps the macros one expression, so they are safe in an
// unbraced if/else; operator& binds looser than <<, so the whole line is built first.
namespace shardflow {
struct LogVoidify {
  void operator&(std::ostream&) {}
};
}  // namespace shardflow

#define SF_LOG(level)                                       \
  !::shardflow::LogEnabled(::shardflow::LogLevel::k##level) \
      ? (void)0                                             \
      : ::shardflow::LogVoidify() & ::shardflow::LogLine(::shardflow::LogLevel::k##level).stream()

#define SF_LOG0(level)                                                                         \
  (::shardflow::GetLogRank() > 0 || !::shardflow::LogEnabled(::shardflow::LogLevel::k##level)) \
      ? (void)0                                                                                \
      : ::shardflow::LogVoidify() & ::shardflow::LogLine(::shardflow::LogLevel::k##level).stream()
