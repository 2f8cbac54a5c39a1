// Configuration: typed option structs filled from an INI file plus command-line overrides.
//
// Each component keeps its settings in a plain struct whose member initializers are the
// defaults, and registers the members it wants configurable with a ConfigSchema:
//
//   struct TrainOptions { int batch_size = 32; double lr = 0.1; std::string optimizer = "sgd"; };
//   void RegisterTrainOptions(ConfigSchema& schema, TrainOptions* o) {
//     schema.DescribeSection("train", "the training loop");
//     schema.Add("train", "batch_size", &o->batch_size, "samples per step per rank").Positive();
//     schema.Add("train", "lr", &o->lr, "learning rate").Positive();
//     schema.AddChoice("train", "optimizer", &o->optimizer, {"sgd", "adam"}, "update rule");
//   }
//
// The default of a key is the member's value when Add is called. Parse() then reads the file
// (with Boost.Program_options; line numbers come from ScanIni), applies the overrides, checks
// every value, and runs the OnResolved hooks. Errors are Error(kInvalidArgument) whose message
// starts with where the value came from: "exp.ini:12: unknown config key 'train.bogus'",
// "command line: bad value 'abc' for train.batch_size: expected int", and whose context names
// the key. Unknown sections and keys, duplicate keys, keys outside a section and malformed
// lines are all errors. Value types: see config_types.hpp (numbers, bool, string, lists).
//
// Output: HelpText() (every key by section with default and description), ResolvedTable() (for
// the log, printed once by rank 0) and ResolvedIni() / SaveResolved() (an INI file that parses
// back to exactly the same values).
//
// Thread-safety: none; build and parse on one thread, before the work starts. The schema holds
// pointers to the registered members: they must outlive it (REQUIRES).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/config_types.hpp"

namespace shardflow {

// Where a value came from.
struct ConfigSource {
  enum class Kind { kDefault, kFile, kCommandLine };
  Kind kind = Kind::kDefault;
  std::string file;  // kFile only
  int line = 0;      // kFile only
  // "default", "exp.ini:12" or "command line".
  std::string ToString() const;
};

// One --section.key=value from the command line.
struct ConfigOverride {
  std::string key;  // "section.key"
  std::string value;
};

namespace config_detail {

// A registered key, type-erased. Internal to the config system.
struct Option {
  std::string section;
  std::string key;
  std::string description;
  std::string type_name;  // "int", "one of: sgd, adam", ...
  std::string default_text;
  bool is_bool = false;
  // Parses text into the member; false (and maybe *why) when malformed.
  std::function<bool(std::string_view text, std::string* why)> set;
  std::function<std::string()> render;  // the member's current value as config text
  // Checks on the member's current value: (passes, requirement such as "must be > 0").
  std::vector<std::pair<std::function<bool()>, std::string>> checks;
  ConfigSource source;
  // Whether the key has any effect on this run (e.g. a CSV key when the format is tfrecord does
  // not); unset: it does. Only ResolvedTable looks at it.
  std::function<bool()> acts;
  // Set by Disown: the key never acts in this program (it sets the value itself); HelpText
  // leaves it out.
  bool disowned = false;
  std::string FullKey() const { return section + "." + key; }
};

}  // namespace config_detail

// Returned by ConfigSchema::Add to attach checks to the option just added. Checks run in Parse()
// after all values are set, on defaults too; a failure is an error naming the key, the value,
// where it came from and the requirement.
template <typename T>
class OptionBuilder {
 public:
  OptionBuilder(config_detail::Option* option, const T* target)
      : option_(option), target_(target) {}

  // `ok(value)` must hold; `requirement` says what is required ("must be a power of two").
  OptionBuilder& Check(std::function<bool(const T&)> ok, std::string requirement) {
    const T* target = target_;
    option_->checks.emplace_back([target, ok = std::move(ok)] { return ok(*target); },
                                 std::move(requirement));
    return *this;
  }
  OptionBuilder& Positive() requires std::is_arithmetic_v<T> {
    return Check([](const T& v) { return v > T{0}; }, "must be > 0");
  }
  OptionBuilder& NonNegative() requires std::is_arithmetic_v<T> {
    return Check([](const T& v) { return !(v < T{0}); }, "must be >= 0");
  }
  OptionBuilder& InRange(T lo, T hi) requires std::is_arithmetic_v<T> {
    return Check(
        [lo, hi](const T& v) { return !(v < lo) && !(hi < v); },
        "must be in [" + ValueCodec<T>::Render(lo) + ", " + ValueCodec<T>::Render(hi) + "]");
  }
  // For strings and lists.
  OptionBuilder& NonEmpty() requires requires(const T& v) { v.empty(); }
  {
    return Check([](const T& v) { return !v.empty(); }, "must not be empty");
  }

 private:
  config_detail::Option* option_;
  const T* target_;
};

class ConfigSchema {
 public:
  ConfigSchema();
  ~ConfigSchema();
  ConfigSchema(const ConfigSchema&) = delete;
  ConfigSchema& operator=(const ConfigSchema&) = delete;

  // One line shown beside the section header in the help text. Optional.
  void DescribeSection(std::string_view section, std::string description);

  // Registers section.key bound to *target, whose current value is the default.
  // REQUIRES: section and key are names of [a-z0-9_], not registered before; description is
  // not empty; the default renders as text that parses back to itself. Violations are bugs and
  // throw Error(kInternal).
  template <ConfigValue T>
  OptionBuilder<T> Add(std::string_view section, std::string_view key, T* target,
                       std::string description) {
    auto option = NewOption(section, key, std::move(description), ValueCodec<T>::TypeName());
    option->is_bool = std::is_same_v<T, bool>;
    option->set = [target](std::string_view text, std::string* why) {
      return ValueCodec<T>::Parse(text, target, why);
    };
    option->render = [target] { return ValueCodec<T>::Render(*target); };
    return OptionBuilder<T>(Register(std::move(option)), target);
  }

  // A key whose value is one of a fixed set of names (matched ignoring case), each mapped to a
  // value of T (an enum, or the name itself for the std::string overload).
  template <typename T>
  OptionBuilder<T> AddChoice(std::string_view section, std::string_view key, T* target,
                             std::vector<std::pair<std::string, T>> names,
                             std::string description) {
    std::vector<std::string> allowed;
    for (const auto& [name, value] : names) allowed.push_back(name);
    auto option = NewOption(section, key, std::move(description), ChoiceTypeName(allowed));
    auto table = std::make_shared<std::vector<std::pair<std::string, T>>>(std::move(names));
    option->set = [target, table](std::string_view text, std::string*) {
      for (const auto& [name, value] : *table) {
        if (config_detail::EqualsIgnoreCase(name, text)) {
          *target = value;
          return true;
        }
      }
      return false;
    };
    option->render = [target, table]() -> std::string {
      for (const auto& [name, value] : *table) {
        if (value == *target) return name;
      }
      return "?";  // a value outside the table; Register reports it as a bad default
    };
    return OptionBuilder<T>(Register(std::move(option)), target);
  }
  OptionBuilder<std::string> AddChoice(std::string_view section, std::string_view key,
                                       std::string* target, const std::vector<std::string>& names,
                                       std::string description);

  // Runs after every value is set and checked, in registration order, at the end of a
  // successful Parse. For cross-key checks (throw Error(kInvalidArgument) naming the keys) and
  // for applying settings (RegisterLogOptions uses it).
  void OnResolved(std::function<void()> hook);

  // Reads the INI file at `path` (none when empty), then applies `overrides` in order (a later
  // override of the same key wins), checks every value and runs the hooks. Call once.
  // Throws Error(kNotFound) when the file cannot be read, Error(kInvalidArgument) otherwise.
  // On error the members may hold a mix of old and new values.
  void Parse(const std::string& path, const std::vector<ConfigOverride>& overrides = {});
  // As Parse, for INI text; `name` stands for the file in messages.
  void ParseString(std::string_view text, const std::string& name,
                   const std::vector<ConfigOverride>& overrides = {});

  bool Has(std::string_view full_key) const;
  bool HasSection(std::string_view section) const;
  // The type name of a key ("bool", "int", ...). Throws Error(kNotFound) for an unknown key.
  std::string TypeName(std::string_view full_key) const;
  // Where the current value of a key came from. Throws Error(kNotFound) for an unknown key.
  ConfigSource SourceOf(std::string_view full_key) const;
  // The current value of a key as config text. Throws Error(kNotFound) for an unknown key.
  std::string ValueText(std::string_view full_key) const;
  // "section.key" of every registered key, sections in registration order.
  std::vector<std::string> Keys() const;
  // The registered key closest to `full_key` by edit distance, or "" when none is close.
  std::string Suggest(std::string_view full_key) const;

  // Every key by section: "  key = default   description [type, checks]".
  // `shown`: which keys (section.key) to list; every one when empty. A section without a
  // shown key is left out.
  std::string HelpText(const std::function<bool(const std::string& full_key)>& shown = {}) const;
  // Marks a key as acting only while `acts` returns true (called after Parse, when the values
  // it looks at are set). Throws Error(kNotFound) for an unknown key.
  void ActsWhen(std::string_view full_key, std::function<bool()> acts);
  // Marks a key as never acting in this program (it sets the value itself, e.g. [eval]'s
  // shuffle_buffer in shardflow-train): left out of HelpText and of the resolved table. The
  // program refuses a value given for it. Throws Error(kNotFound) for an unknown key.
  void Disown(std::string_view full_key);
  // "key  value  source" for every key that acts for this run (ActsWhen), aligned; long values
  // are shortened; a last line counts the keys left out and says where every key is written
  // (`all_keys_in`, e.g. "resolved.ini has every key").
  std::string ResolvedTable(std::string_view all_keys_in = "resolved.ini has every key") const;
  // INI text with every key, its description as a comment, that re-parses to the same values.
  std::string ResolvedIni() const;
  // Writes ResolvedIni() to `path`. Throws Error(kIo) naming the file.
  void SaveResolved(const std::string& path) const;

 private:
  struct Section;
  std::unique_ptr<config_detail::Option> NewOption(std::string_view section, std::string_view key,
                                                   std::string description, std::string type);
  config_detail::Option* Register(std::unique_ptr<config_detail::Option> option);
  static std::string ChoiceTypeName(const std::vector<std::string>& names);
  config_detail::Option* Find(std::string_view full_key) const;
  config_detail::Option& Get(std::string_view full_key) const;
  void SetValue(config_detail::Option& option, std::string_view text, const ConfigSource& source);
  std::vector<const config_detail::Option*> OrderedOptions() const;

  std::vector<Section> sections_;
  std::vector<std::unique_ptr<config_detail::Option>> options_;
  std::vector<std::function<void()>> hooks_;
};

}  // namespace shardflow
