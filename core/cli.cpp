#include "core/cli.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"

namespace shardflow {
namespace {

// The log file this process writes to, as last applied (SHARDFLOW_LOG_FILE at first).
std::string& AppliedLogFile() {
  static std::string file = [] { return env::Text("SHARDFLOW_LOG_FILE").value_or(""); }();
  return file;
}

void WriteStdout(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) break;  // stdout closed: nothing useful left to do with the text
    done += static_cast<size_t>(n);
  }
}

// Each line in one write(2) to stderr, the stream log lines and errors use: a line is never
// split (a pipe write of at most PIPE_BUF bytes is atomic) and, in one stream, never overtaken
// by an error printed after it, however mpirun forwards and merges the ranks' streams.
void WriteStderrLines(const std::string& text) {
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    end = end == std::string::npos ? text.size() : end + 1;
    size_t done = begin;
    while (done < end) {
      const ssize_t n = ::write(STDERR_FILENO, text.data() + done, end - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
    begin = end;
  }
}

std::string JoinChoices(const std::vector<std::string>& choices, const std::string& separator) {
  std::string out;
  for (const std::string& choice : choices) out += (out.empty() ? "" : separator) + choice;
  return out;
}

bool IsRankZero() { return GetLogRank() <= 0; }

[[noreturn]] void Fail(const std::string& what, const std::string& key = "",
                       const std::string& hint = "") {
  throw Error(ErrorCode::kInvalidArgument, "command line: " + what, {.key = key, .hint = hint});
}

}  // namespace

void RegisterLogOptions(ConfigSchema& schema, LogOptions* options) {
  options->level = LogLevelName(GetLogLevel());
  options->file = AppliedLogFile();
  schema.DescribeSection("log", "logging of every rank");
  schema.AddChoice("log", "level", &options->level, {"error", "warn", "info", "debug"},
                   "least severe level printed");
  schema.Add("log", "file", &options->file,
             "file every rank appends its log lines to (empty: stderr)");
  schema.OnResolved([options] { ApplyLogOptions(*options); });
}

void ApplyLogOptions(const LogOptions& options) {
  SetLogLevel(ParseLogLevel(options.level));
  if (!options.file.empty() && options.file != AppliedLogFile()) {
    SetLogFile(options.file);
    AppliedLogFile() = options.file;
  }
}

AppSpec::AppSpec(std::string program, std::string summary)
    : program_(std::move(program)), summary_(std::move(summary)) {}

AppSpec& AppSpec::Flag(std::string name, std::string* value, std::string value_name,
                       std::string description) {
  flags_.push_back(
      {std::move(name), std::move(value_name), std::move(description), value, nullptr});
  return *this;
}

AppSpec& AppSpec::Switch(std::string name, bool* value, std::string description) {
  flags_.push_back({std::move(name), "", std::move(description), nullptr, value});
  return *this;
}

AppSpec& AppSpec::OptionalValue(std::string name, std::string* value, std::string bare_value,
                                std::vector<std::string> choices, std::string description) {
  flags_.push_back({std::move(name), "", std::move(description), value, nullptr,
                    std::move(bare_value), std::move(choices)});
  return *this;
}

AppSpec& AppSpec::Positionals(std::vector<std::string>* values, std::string value_name,
                              std::string description, size_t min_count) {
  positionals_ = values;
  positional_name_ = std::move(value_name);
  positional_description_ = std::move(description);
  positional_min_ = min_count;
  return *this;
}

AppSpec& AppSpec::PrintResolved(bool print) {
  print_resolved_ = print;
  return *this;
}

AppSpec& AppSpec::RequireConfig(bool required) {
  require_config_ = required;
  return *this;
}

AppSpec& AppSpec::HelpKeys(std::vector<std::string> prefixes) {
  help_keys_ = std::move(prefixes);
  return *this;
}

const AppSpec::FlagSpec* AppSpec::FindFlag(const std::string& name) const {
  for (const FlagSpec& flag : flags_) {
    if (flag.name == name) return &flag;
  }
  return nullptr;
}

CommandLine SplitCommandLine(int argc, const char* const* argv, const ConfigSchema& schema,
                             const AppSpec& app) {
  CommandLine result;
  // --help wins over every other flag, even a wrong one.
  for (int i = 1; i < argc && std::string(argv[i]) != "--"; ++i) {
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
      result.help = true;
      return result;
    }
  }
  bool config_given = false;
  bool flags_done = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (flags_done || arg.empty() || arg[0] != '-' || arg == "-") {
      if (app.positionals_ == nullptr) {
        Fail("unexpected argument '" + arg + "'", "", "run with --help for the usage");
      }
      app.positionals_->push_back(arg);
      continue;
    }
    if (arg == "--") {
      flags_done = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) Fail("unknown flag '" + arg + "'", "", "flags start with --");
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const bool has_inline = eq != std::string::npos;
    // The value of a flag that needs one: after '=' or the next argument.
    auto take_value = [&]() -> std::string {
      if (has_inline) return arg.substr(eq + 1);
      if (i + 1 >= argc) Fail("flag '--" + name + "' needs a value", name);
      return argv[++i];
    };
    const bool next_is_value = i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0;

    if (name == "config") {
      if (config_given) Fail("--config given twice", "config");
      result.config_path = take_value();
      if (result.config_path.empty()) Fail("--config needs a file name", "config");
      config_given = true;
    } else if (name.find('.') != std::string::npos) {
      if (!schema.Has(name)) {
        const std::string suggestion = schema.Suggest(name);
        Fail("unknown config key '" + name + "' (--" + name + ")", name,
             suggestion.empty() ? "run with --help for the keys"
                                : "did you mean '--" + suggestion + "'?");
      }
      if (!has_inline && !next_is_value && schema.TypeName(name) == "bool") {
        result.overrides.push_back({name, "true"});
      } else {
        result.overrides.push_back({name, take_value()});
      }
    } else if (const AppSpec::FlagSpec* flag = app.FindFlag(name)) {
      if (flag->enabled != nullptr) {
        bool on = true;
        if (has_inline && !ValueCodec<bool>::Parse(arg.substr(eq + 1), &on, nullptr)) {
          Fail("bad value '" + arg.substr(eq + 1) + "' for --" + name + ": expected bool", name);
        }
        *flag->enabled = on;
      } else if (!flag->bare_value.empty()) {
        *flag->value = has_inline ? arg.substr(eq + 1) : flag->bare_value;
        const auto& choices = flag->choices;
        if (std::find(choices.begin(), choices.end(), *flag->value) == choices.end()) {
          Fail("bad value '" + *flag->value + "' for --" + name + ": expected one of " +
                   JoinChoices(choices, ", "),
               name);
        }
      } else {
        *flag->value = take_value();
      }
    } else {
      std::string hint = "run with --help for the flags";
      if (const std::string key = schema.Suggest(name); !key.empty()) {
        hint = "config keys are set as --section.key=value; did you mean '--" + key + "'?";
      }
      Fail("unknown flag '--" + name + "'", name, hint);
    }
  }
  if (app.require_config_ && !config_given) {
    Fail("--config FILE is required", "config", "run with --help for the usage");
  }
  const size_t positionals = app.positionals_ == nullptr ? 0 : app.positionals_->size();
  if (positionals < app.positional_min_) {
    Fail("expected at least " + std::to_string(app.positional_min_) + " " + app.positional_name_ +
             " argument(s), got " + std::to_string(positionals),
         "", "run with --help for the usage");
  }
  return result;
}

std::string CommandLineHelp(const ConfigSchema& schema, const AppSpec& app) {
  // "--name VALUE", "--name" or "--name[=a|b]".
  auto usage = [](const AppSpec::FlagSpec& flag) {
    if (!flag.bare_value.empty())
      return "--" + flag.name + "[=" + JoinChoices(flag.choices, "|") + "]";
    return "--" + flag.name + (flag.value_name.empty() ? "" : " " + flag.value_name);
  };
  std::ostringstream out;
  out << "usage: " << app.program_ << (app.require_config_ ? " --config FILE" : " [--config FILE]")
      << " [--section.key=value ...]";
  for (const AppSpec::FlagSpec& flag : app.flags_) {
    out << " [" << usage(flag) << "]";
  }
  if (app.positionals_ != nullptr) out << " " << app.positional_name_ << "...";
  out << "\n";
  if (!app.summary_.empty()) out << app.summary_ << "\n";

  std::vector<std::pair<std::string, std::string>> rows = {
      {"--config FILE", "INI file of settings (sections below); unset keys keep their defaults"},
      {"--section.key=VALUE", "set one config key, overriding the file (also --section.key VALUE)"},
      {"--help", "print this help and exit"}};
  for (const AppSpec::FlagSpec& flag : app.flags_) {
    std::string description = flag.description;
    if (flag.value != nullptr && !flag.value->empty() && flag.bare_value.empty()) {
      description += " (default: " + *flag.value + ")";
    }
    rows.emplace_back(usage(flag), description);
  }
  if (app.positionals_ != nullptr) {
    rows.emplace_back(app.positional_name_ + "...", app.positional_description_);
  }
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.first.size());
  out << "\nflags:\n";
  for (const auto& [name, description] : rows) {
    out << "  " << name << std::string(width + 2 - name.size(), ' ') << description << "\n";
  }
  if (app.help_keys_.empty()) {
    out << "\nconfig keys (\"key = default  description [type]\"):\n" << schema.HelpText();
  } else {
    out << "\nconfig keys " << app.program_
        << " reads (\"key = default  description [type]\"); the config's other keys (a "
           "training config's) are accepted and not used:\n"
        << schema.HelpText([&](const std::string& key) {
             for (const std::string& p : app.help_keys_) {
               if (p.back() == '.' ? key.rfind(p, 0) == 0 : key == p) return true;
             }
             return false;
           });
  }
  out << "\n" << env::Help();
  return out.str();
}

CommandLine ParseCommandLine(int argc, const char* const* argv, ConfigSchema& schema,
                             const AppSpec& app) {
  if (!schema.Has("log.level")) {
    static LogOptions process_log_options;
    RegisterLogOptions(schema, &process_log_options);
  }
  CommandLine command_line = SplitCommandLine(argc, argv, schema, app);
  if (command_line.help) {
    if (IsRankZero()) WriteStdout(CommandLineHelp(schema, app));
    throw EarlyExit{0};
  }
  schema.Parse(command_line.config_path, command_line.overrides);
  if (app.print_resolved()) PrintResolvedTable(schema);
  return command_line;
}

void PrintResolvedTable(const ConfigSchema& schema, std::string_view all_keys_in) {
  // The table is information: --log.level=warn (or error) hides it; resolved.ini keeps it.
  if (IsRankZero() && LogEnabled(LogLevel::kInfo)) {
    WriteStderrLines(schema.ResolvedTable(all_keys_in));
  }
}

}  // namespace shardflow
