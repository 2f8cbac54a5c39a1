// Every SHARDFLOW_* environment variable, each with one rule, read through this one parser.
//
// The table (Variables()) is the list `--help` prints and the README mirrors: a name, what it
// takes, and what it does. Code reads a variable only through Text/Int/Choice/Flag below, which
// refuse a name outside the table (a bug: Error(kInternal)) and a value outside the rule (a
// usage error: Error(kInvalidArgument), key = the variable, naming the value and what it takes).
// An unset variable and an empty one are the same: the default applies.
// Variables other programs own (CUDA_VISIBLE_DEVICES, OMP_WAIT_POLICY, TMPDIR, OpenMPI's
// MCA variables, the launchers' PMIx and Slurm ones) are read where they are used, with getenv.
// Thread-safety: reads only; safe from any thread.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace shardflow::env {

struct Variable {
  std::string_view name;
  std::string_view takes;    // "an integer >= 1", "one of on, off", "a path", ...
  std::string_view meaning;  // one line
  bool test_only = false;    // fault injection and test hooks, never for production runs
};

// Every variable shardflow reads, sorted by name.
const std::vector<Variable>& Variables();

// The value, or nullopt when unset or empty. Throws Error(kInternal) for a name not in the table.
std::optional<std::string> Text(std::string_view name);
// An integer >= `min`, or `fallback` when unset. Throws Error(kInvalidArgument) naming the
// variable for anything else ("4x", "0" under min 1).
int64_t Int(std::string_view name, int64_t fallback, int64_t min);
// One of `choices` (matched exactly), or `fallback` when unset. Throws Error(kInvalidArgument)
// naming the variable and the choices for another word.
std::string Choice(std::string_view name, std::string_view fallback,
                   std::initializer_list<std::string_view> choices);
// "1" is on, "0" or unset off. Throws Error(kInvalidArgument) naming the variable otherwise.
bool Flag(std::string_view name);

// The table as help text: "environment:" and a line per variable (test-only ones marked).
std::string Help();

}  // namespace shardflow::env
