// The command line of a shardflow program: --config FILE, --help, --section.key=value overrides
// and the program's own flags.
//
//   TrainOptions opts;                      // structs of every component
//   std::string output_dir;
//   bool resume = false;
//   ConfigSchema schema;
//   RegisterTrainOptions(schema, &opts);    // each component registers its keys
//   AppSpec app("shardflow-train", "trains a model on sharded data");
//   app.Flag("output", &output_dir, "DIR", "where checkpoints and resolved.ini go")
//      .Switch("resume", &resume, "continue from the newest checkpoint in --output");
//   ParseCommandLine(argc, argv, schema, app);   // inside RunMain's parse phase
//
// Accepted arguments: --help / -h; --config FILE (or --config=FILE); --section.key=value or
// --section.key value (a bare --section.key sets a bool key to true); the app's --name VALUE
// flags, --name switches (--name=false also works) and --name[=choice] optional values; plain
// arguments when the app takes positionals; "--" ends the flags. An unknown flag is an error naming
// it (and the nearest known flag or key). Overrides win over the file, later ones over earlier
// ones.
//
// Thread-safety: call from the main thread during the parse phase.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"

namespace shardflow {

// The [log] section: level and file, applied to core/logging when the config is resolved.
struct LogOptions {
  std::string level = "info";  // error | warn | info | debug
  std::string file;            // every rank appends here; empty: stderr
};

// Registers log.level and log.file bound to *options, with the current process settings
// (SHARDFLOW_LOG_LEVEL / SHARDFLOW_LOG_FILE, already applied by MpiEnvironment) as defaults
// (overwriting *options), and a hook that applies them when the schema is resolved.
// REQUIRES: *options outlives `schema`.
void RegisterLogOptions(ConfigSchema& schema, LogOptions* options);
// SetLogLevel, and SetLogFile when the file differs from the one in use.
// Throws Error(kInvalidArgument / kIo).
void ApplyLogOptions(const LogOptions& options);

// What a program accepts besides config keys. Holds pointers to the caller's variables, which
// must outlive it (REQUIRES).
class AppSpec {
 public:
  AppSpec(std::string program, std::string summary);

  // --name VALUE (or --name=VALUE) sets *value; value_name shows in the help ("DIR").
  AppSpec& Flag(std::string name, std::string* value, std::string value_name,
                std::string description);
  // --name sets *value to true; --name=false (any bool spelling) sets it explicitly.
  AppSpec& Switch(std::string name, bool* value, std::string description);
  // --name alone sets *value to bare_value; --name=V sets it to V, which must be one of
  // `choices` (the help shows "--name[=a|b]"). For a switch with a second mode
  // (--resume, --resume=auto).
  AppSpec& OptionalValue(std::string name, std::string* value, std::string bare_value,
                         std::vector<std::string> choices, std::string description);
  // Plain arguments are appended to *values; at least min_count are required.
  AppSpec& Positionals(std::vector<std::string>* values, std::string value_name,
                       std::string description, size_t min_count = 0);
  // Whether ParseCommandLine prints the resolved table (rank 0, stdout). Default true.
  AppSpec& PrintResolved(bool print);
  // Whether --config is required. Default false.
  AppSpec& RequireConfig(bool required);
  // The config keys the help lists: a section ("model.", ending in a dot) or a whole key
  // ("train.device"); the help says the others are accepted and not used (a program that reads a
  // config another program also reads). Default: every key.
  AppSpec& HelpKeys(std::vector<std::string> prefixes);

  const std::string& program() const { return program_; }
  bool print_resolved() const { return print_resolved_; }

 private:
  friend struct CommandLine SplitCommandLine(int argc, const char* const* argv,
                                             const ConfigSchema& schema, const AppSpec& app);
  friend std::string CommandLineHelp(const ConfigSchema& schema, const AppSpec& app);
  struct FlagSpec {
    std::string name;
    std::string value_name;  // empty for a switch
    std::string description;
    std::string* value = nullptr;
    bool* enabled = nullptr;
    std::string bare_value;            // OptionalValue: the value of a bare --name
    std::vector<std::string> choices;  // OptionalValue: the values --name=V accepts
  };
  const FlagSpec* FindFlag(const std::string& name) const;

  std::string program_;
  std::string summary_;
  std::vector<FlagSpec> flags_;
  std::vector<std::string>* positionals_ = nullptr;
  std::string positional_name_;
  std::string positional_description_;
  size_t positional_min_ = 0;
  bool print_resolved_ = true;
  bool require_config_ = false;
  std::vector<std::string> help_keys_;
};

// The config-related part of a command line.
struct CommandLine {
  bool help = false;
  std::string config_path;
  std::vector<ConfigOverride> overrides;
};

// Splits argv (argv[0] is skipped): sets the app's flag variables and returns the config part.
// Does not read the config. Throws Error(kInvalidArgument) "command line: ..." naming the flag.
CommandLine SplitCommandLine(int argc, const char* const* argv, const ConfigSchema& schema,
                             const AppSpec& app);

// Usage, the app's flags, then every config key by section (ConfigSchema::HelpText).
std::string CommandLineHelp(const ConfigSchema& schema, const AppSpec& app);

// The front end for a program's parse phase; runs on every rank:
//  1. --help anywhere: rank 0 prints CommandLineHelp to stdout; every rank throws EarlyExit{0}.
//  2. SplitCommandLine; registers [log] (RegisterLogOptions with process-wide storage) if the
//     schema has no log.level key.
//  3. schema.Parse(config file, overrides); the [log] settings take effect.
//  4. Rank 0 prints the resolved table to stderr, the stream of log lines and errors, one
//     write per line (unless app.PrintResolved(false) or the log level is above info).
// Errors are thrown for RunMain to print once. Rank is GetLogRank() (set by MpiEnvironment;
// -1 outside MPI counts as rank 0).
CommandLine ParseCommandLine(int argc, const char* const* argv, ConfigSchema& schema,
                             const AppSpec& app);

// Step 4 of ParseCommandLine, for an app that turned it off to print the table only once its
// own parse-phase checks have passed. The table goes to stderr, one write(2) per line: on
// stdout, followed at once by an error on stderr, it reached shared logs spliced mid-row, since
// mpirun forwards the two streams in chunks of its own (issue 24, item 3); in one stream the
// error can only come after the table's last line. Rank 0, log level info or below.
// `all_keys_in`: where every key is written (ConfigSchema::ResolvedTable).
void PrintResolvedTable(const ConfigSchema& schema,
                        std::string_view all_keys_in = "resolved.ini has every key");

}  // namespace shardflow
