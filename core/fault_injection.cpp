#include "core/fault_injection.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>

#include "core/environment.hpp"
#include "core/error.hpp"

namespace shardflow::fault {
namespace {

constexpr const char* kCheckpointFault = "SHARDFLOW_TEST_CHECKPOINT_FAULT";

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

// A count of 1 or more, in decimal digits only.
std::optional<int64_t> ParseCount(std::string_view text) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != text.npos) {
    return std::nullopt;
  }
  const int64_t n = std::stoll(std::string(text));
  return n >= 1 ? std::optional<int64_t>(n) : std::nullopt;
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

// One row per variable: its parser, and the line a kKill fault writes before the signal.
struct VariableRow {
  const char* name;
  std::vector<Fault> (*parse)(std::string_view value);
  std::string (*announce)(const Fault& fault, const Site& site);
};
constexpr VariableRow kVariables[] = {
    {kCheckpointFault, ParseCheckpointFault, CheckpointAnnouncement},
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

[[noreturn]] void Kill(const Fault& fault, const Site& site) {
  const std::string line = VariableNamed(fault.variable)->announce(fault, site) + "\n";
  std::fputs(line.c_str(), stderr);
  std::fflush(stderr);
  std::raise(SIGKILL);
  std::abort();  // not reached: SIGKILL cannot be caught
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
    if (fault.point != point || fault.rank != site.rank || fault.index != site.index) continue;
    switch (fault.action) {
      case Fault::Action::kKill:
        Kill(fault, site);
      case Fault::Action::kFailNoSpace:
        FailNoSpace(fault, site);
    }
  }
}

}  // namespace shardflow::fault
