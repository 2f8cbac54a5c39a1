#include "core/fault_injection.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <thread>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::fault {
namespace {

constexpr const char* kCheckpointFault = "SHARDFLOW_TEST_CHECKPOINT_FAULT";
constexpr const char* kTrainFault = "SHARDFLOW_TEST_FAULT";
constexpr const char* kRowIds = "SHARDFLOW_TEST_ROW_IDS";

// One row per Point, in enumerator order: its spelling, the variable whose values spell it, and
// how a real failure there begins (for kFailNoSpace; null where none is injected).
struct PointRow {
  Point point;
  const char* name;
  const char* variable;
  const char* failure;
};
constexpr PointRow kPoints[] = {
    {Point::kCheckpointWrite, "write", kCheckpointFault, "cannot write the HDF5 data"},
    {Point::kCheckpointFsync, "fsync", kCheckpointFault, nullptr},
    {Point::kCheckpointRename, "rename", kCheckpointFault, nullptr},
    {Point::kCheckpointPublished, "published", kCheckpointFault, nullptr},
    {Point::kCheckpointPrune, "prune", kCheckpointFault, nullptr},
    {Point::kStepStart, "step", kTrainFault, nullptr},
    {Point::kBeforeBatch, "batch", kTrainFault, nullptr},
    {Point::kBatchTaken, "taken", kRowIds, nullptr},
    {Point::kInAllreduce, "allreduce", kTrainFault, nullptr},
    {Point::kBeforeCheckpoint, "checkpoint", kTrainFault, nullptr},
};

constexpr bool RowsInOrder() {
  for (size_t i = 0; i < std::size(kPoints); ++i) {
    if (static_cast<size_t>(kPoints[i].point) != i) return false;
  }
  return true;
}
static_assert(RowsInOrder(), "kPoints: one row per Point, in enumerator order");

const PointRow& RowOf(Point point) { return kPoints[static_cast<size_t>(point)]; }

std::optional<Point> PointNamed(std::string_view variable, std::string_view name) {
  for (const PointRow& row : kPoints) {
    if (row.variable == variable && row.name == name) return row.point;
  }
  return std::nullopt;
}

// A count of 0 or more, in decimal digits only.
std::optional<int64_t> ParseNumber(std::string_view text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != text.npos) {
    return std::nullopt;
  }
  return std::stoll(std::string(text));
}

// A count of 1 or more.
std::optional<int64_t> ParseCount(std::string_view text) {
  const std::optional<int64_t> n = ParseNumber(text);
  return n && *n >= 1 ? n : std::nullopt;
}

// PHASE:N or enospc:N.
std::vector<Fault> ParseCheckpointFault(std::string_view value) {
  const size_t colon = value.find(':');
  const std::string_view phase = value.substr(0, colon);
  const bool enospc = phase == "enospc";
  const std::optional<Point> point =
      enospc ? Point::kCheckpointWrite : PointNamed(kCheckpointFault, phase);
  const std::optional<int64_t> n =
      colon == value.npos ? std::nullopt : ParseCount(value.substr(colon + 1));
  if (!point || !n) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("bad ") + kCheckpointFault + " '" + std::string(value) +
                    "': expected PHASE:N (PHASE write, fsync, rename, published or prune) or "
                    "enospc:N, N >= 1 counting this process's checkpoints");
  }
  return {Fault{.variable = kCheckpointFault,
                .point = *point,
                .action = enospc ? Fault::Action::kFailNoSpace : Fault::Action::kKill,
                .rank = 0,
                .index = *n}};
}

std::string CheckpointAnnouncement(const Fault& fault, const Site& site) {
  return std::string(fault.variable) + ": SIGKILL at '" + PointName(fault.point) +
         "' of checkpoint " + std::to_string(site.index);
}

// One KIND of SHARDFLOW_TEST_FAULT: where it acts, what it does, and whether N is the step at
// which it acts (else N is milliseconds, every step).
struct TrainKind {
  const char* name;
  Point point;
  Fault::Action action;
  bool n_is_step;
  bool every_rank_allowed;
};
constexpr TrainKind kTrainKinds[] = {
    {"kill", Point::kStepStart, Fault::Action::kKill, true, false},
    {"hang", Point::kStepStart, Fault::Action::kStop, true, false},
    {"term", Point::kStepStart, Fault::Action::kTerm, true, true},
    {"usr1", Point::kStepStart, Fault::Action::kUsr1, true, true},
    {"slow", Point::kStepStart, Fault::Action::kSleep, false, false},
    {"slow_input", Point::kBeforeBatch, Fault::Action::kSleep, false, false},
    {"stall", Point::kBeforeBatch, Fault::Action::kSleep, true, false},
    {"slow_checkpoint", Point::kBeforeCheckpoint, Fault::Action::kSleep, false, false},
    {"kill_allreduce", Point::kInAllreduce, Fault::Action::kKill, true, false},
};

// KIND:RANK:N (KIND:all:N for term and usr1).
Fault ParseOneTrainFault(std::string_view value) {
  const size_t a = value.find(':');
  const size_t b = a == value.npos ? a : value.find(':', a + 1);
  const TrainKind* kind = nullptr;
  for (const TrainKind& k : kTrainKinds) {
    if (value.substr(0, a) == k.name) kind = &k;
  }
  const std::string_view who = b == value.npos ? "" : value.substr(a + 1, b - a - 1);
  const bool every = kind != nullptr && kind->every_rank_allowed && who == "all";
  const std::optional<int64_t> rank = every ? Fault::kEveryRank : ParseNumber(who);
  const int64_t n = b == value.npos ? -1 : ParseNumber(value.substr(b + 1)).value_or(-1);
  if (kind == nullptr || !rank || *rank > 1'000'000 || n < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("bad ") + kTrainFault + " '" + std::string(value) +
                    "': expected kill:RANK:STEP, hang:RANK:STEP, slow:RANK:MILLISECONDS, "
                    "slow_checkpoint:RANK:MILLISECONDS, slow_input:RANK:MILLISECONDS, "
                    "stall:RANK:STEP, kill_allreduce:RANK:STEP, term:RANK|all:STEP or "
                    "usr1:RANK|all:STEP");
  }
  const std::string_view name = kind->name;
  Fault f{.variable = kTrainFault,
          .point = kind->point,
          .action = kind->action,
          .rank = static_cast<int>(*rank),
          .index = kind->n_is_step ? n : Fault::kEveryIndex};
  if (name == "stall") f.millis = 1500;
  if (name == "kill_allreduce") f.millis = 50;
  if (!kind->n_is_step) f.millis = n;
  f.announce = name == "slow_checkpoint";
  return f;
}

// One fault, or several separated by commas (e.g. slow:0:150,slow_checkpoint:0:2500).
std::vector<Fault> ParseTrainFault(std::string_view value) {
  std::vector<Fault> faults;
  size_t begin = 0;
  while (true) {
    const size_t comma = value.find(',', begin);
    faults.push_back(ParseOneTrainFault(value.substr(begin, comma - begin)));
    if (comma == value.npos) return faults;
    begin = comma + 1;
  }
}

std::string SignalName(Fault::Action action) {
  switch (action) {
    case Fault::Action::kStop:
      return "SIGSTOP";
    case Fault::Action::kTerm:
      return "SIGTERM";
    case Fault::Action::kUsr1:
      return "SIGUSR1";
    default:
      return "SIGKILL";
  }
}

std::string TrainAnnouncement(const Fault& fault, const Site& site) {
  const std::string who = std::string(kTrainFault) + ": rank " + std::to_string(site.rank);
  switch (fault.point) {
    case Point::kInAllreduce:
      return who + " raises SIGKILL inside the gradient all-reduce of step " +
             std::to_string(site.index);
    case Point::kBeforeCheckpoint:
      return who + " sleeps " + std::to_string(fault.millis) + " ms before writing a checkpoint";
    default:
      return who + " raises " + SignalName(fault.action) + " at step " + std::to_string(site.index);
  }
}

// PREFIX: every rank, every step.
std::vector<Fault> ParseRowIds(std::string_view value) {
  return {Fault{.variable = kRowIds,
                .point = Point::kBatchTaken,
                .action = Fault::Action::kAppend,
                .rank = Fault::kEveryRank,
                .index = Fault::kEveryIndex,
                .path = std::string(value)}};
}

std::string NoAnnouncement(const Fault&, const Site&) { return ""; }

// One row per variable: its parser, and the line a kKill fault writes before the signal.
struct VariableRow {
  const char* name;
  std::vector<Fault> (*parse)(std::string_view value);
  std::string (*announce)(const Fault& fault, const Site& site);
};
constexpr VariableRow kVariables[] = {
    {kCheckpointFault, ParseCheckpointFault, CheckpointAnnouncement},
    {kTrainFault, ParseTrainFault, TrainAnnouncement},
    {kRowIds, ParseRowIds, NoAnnouncement},
};

const VariableRow* VariableNamed(std::string_view name) {
  for (const VariableRow& row : kVariables) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

const std::vector<Fault>& EnvironmentFaults() {
  // A throw leaves the static unset: every later call parses again and throws the same error.
  static const std::vector<Fault> faults = [] {
    std::vector<Fault> all;
    for (const VariableRow& row : kVariables) {
      const std::optional<std::string> value = env::Text(row.name);  // core/environment.hpp
      if (!value) continue;
      for (const Fault& fault : Parse(row.name, *value)) all.push_back(fault);
    }
    return all;
  }();
  return faults;
}

void Announce(const Fault& fault, const Site& site) {
  const std::string line = VariableNamed(fault.variable)->announce(fault, site);
  if (line.empty()) return;
  if (fault.variable == std::string_view(kCheckpointFault)) {
    std::fputs((line + "\n").c_str(), stderr);
    std::fflush(stderr);
  } else {
    SF_LOG(Warn) << line;  // the training log's own format (unbuffered)
  }
}

void Sleep(int64_t millis) { std::this_thread::sleep_for(std::chrono::milliseconds(millis)); }

[[noreturn]] void Kill(const Fault& fault, const Site& site) {
  Announce(fault, site);
  Sleep(fault.millis);
  std::raise(SIGKILL);
  std::abort();  // not reached: SIGKILL cannot be caught
}

void Signal(const Fault& fault, const Site& site) {
  Announce(fault, site);
  const int signal = fault.action == Fault::Action::kStop   ? SIGSTOP
                     : fault.action == Fault::Action::kTerm ? SIGTERM
                                                            : SIGUSR1;
  std::raise(signal);
  if (signal == SIGTERM) std::raise(signal);  // a second one, as an impatient scheduler sends
}

void Append(const Fault& fault, const Site& site) {
  std::ofstream out(fault.path + ".rank" + std::to_string(site.rank), std::ios::app);
  out << site.line << '\n';
}

[[noreturn]] void FailNoSpace(const Fault& fault, const Site& site) {
  throw Error(ErrorCode::kIo,
              std::string(RowOf(fault.point).failure) + ": " + std::strerror(ENOSPC) + " (errno " +
                  std::to_string(ENOSPC) + ") (injected by " + fault.variable + ")",
              {.file = std::string(site.file)});
}

}  // namespace

const char* PointName(Point point) { return RowOf(point).name; }

std::vector<Fault> Parse(std::string_view variable, std::string_view value) {
  const VariableRow* row = VariableNamed(variable);
  if (row == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "no fault injection variable " +
                                                 std::string(variable) +
                                                 " (core/fault_injection.hpp lists them)");
  }
  if (value.empty()) return {};
  return row->parse(value);
}

void CheckEnvironment() { EnvironmentFaults(); }

bool Armed(Point point) {
  for (const Fault& fault : EnvironmentFaults()) {
    if (fault.point == point) return true;
  }
  return false;
}

void At(Point point, const Site& site) { At(EnvironmentFaults(), point, site); }

void At(const std::vector<Fault>& faults, Point point, const Site& site) {
  for (const Fault& fault : faults) {
    if (fault.point != point) continue;
    if (fault.rank != Fault::kEveryRank && fault.rank != site.rank) continue;
    if (fault.index != Fault::kEveryIndex && fault.index != site.index) continue;
    switch (fault.action) {
      case Fault::Action::kKill:
        Kill(fault, site);
      case Fault::Action::kStop:
      case Fault::Action::kTerm:
      case Fault::Action::kUsr1:
        Signal(fault, site);
        break;
      case Fault::Action::kSleep:
        if (fault.announce) Announce(fault, site);
        Sleep(fault.millis);
        break;
      case Fault::Action::kFailNoSpace:
        FailNoSpace(fault, site);
      case Fault::Action::kAppend:
        Append(fault, site);
        break;
    }
  }
}

}  // namespace shardflow::fault
