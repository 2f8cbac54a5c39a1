#include "core/config.hpp"

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/edit_distance.hpp"
#include "core/error.hpp"
#include "core/ini_scan.hpp"

namespace shardflow {

namespace config_detail {

std::string_view Trim(std::string_view text) {
  const char* ws = " \t\r\n";
  const size_t first = text.find_first_not_of(ws);
  if (first == std::string_view::npos) return {};
  const size_t last = text.find_last_not_of(ws);
  return text.substr(first, last - first + 1);
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

}  // namespace config_detail

bool ValueCodec<bool>::Parse(std::string_view text, bool* out, std::string*) {
  using config_detail::EqualsIgnoreCase;
  for (const char* yes : {"true", "1", "yes", "on"}) {
    if (EqualsIgnoreCase(text, yes)) return *out = true, true;
  }
  for (const char* no : {"false", "0", "no", "off"}) {
    if (EqualsIgnoreCase(text, no)) return *out = false, true;
  }
  return false;
}

bool ValueCodec<std::string>::Parse(std::string_view text, std::string* out, std::string* why) {
  if (text.find_first_of("#\r\n") != std::string_view::npos) {
    if (why != nullptr) *why = "an INI value cannot contain '#' or a line break";
    return false;
  }
  if (config_detail::Trim(text).size() != text.size()) {
    if (why != nullptr) *why = "leading or trailing spaces do not survive an INI file";
    return false;
  }
  out->assign(text);
  return true;
}

std::string ConfigSource::ToString() const {
  switch (kind) {
    case Kind::kDefault:
      return "default";
    case Kind::kFile:
      return file + ":" + std::to_string(line);
    case Kind::kCommandLine:
      return "command line";
  }
  return "?";
}

struct ConfigSchema::Section {
  std::string name;
  std::string description;
  std::vector<config_detail::Option*> options;  // registration order
};

namespace {

using config_detail::Option;

bool IsKeyName(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string Shorten(const std::string& s, size_t width) {
  if (s.size() <= width) return s;
  return s.substr(0, width - 3) + "...";
}

std::string DidYouMean(const std::string& suggestion) {
  return suggestion.empty() ? std::string() : "did you mean '" + suggestion + "'?";
}

}  // namespace

ConfigSchema::ConfigSchema() = default;
ConfigSchema::~ConfigSchema() = default;

void ConfigSchema::DescribeSection(std::string_view section, std::string description) {
  for (Section& s : sections_) {
    if (s.name == section) {
      s.description = std::move(description);
      return;
    }
  }
  sections_.push_back({std::string(section), std::move(description), {}});
}

std::unique_ptr<Option> ConfigSchema::NewOption(std::string_view section, std::string_view key,
                                                std::string description, std::string type) {
  const std::string full = std::string(section) + "." + std::string(key);
  if (!IsKeyName(section) || !IsKeyName(key)) {
    throw Error(ErrorCode::kInternal, "config key '" + full + "' is not of the form name.name",
                {.key = full, .hint = "use lower-case letters, digits and '_'"});
  }
  if (Find(full) != nullptr) {
    throw Error(ErrorCode::kInternal, "config key '" + full + "' registered twice", {.key = full});
  }
  if (description.empty()) {
    throw Error(ErrorCode::kInternal, "config key '" + full + "' has no description",
                {.key = full});
  }
  auto option = std::make_unique<Option>();
  option->section = std::string(section);
  option->key = std::string(key);
  option->description = std::move(description);
  option->type_name = std::move(type);
  return option;
}

Option* ConfigSchema::Register(std::unique_ptr<Option> option) {
  // The default must survive the trip through text, or resolved.ini would not reproduce it.
  const std::string text = option->render();
  std::string why;
  if (!option->set(text, &why) || option->render() != text) {
    throw Error(ErrorCode::kInternal,
                "default '" + text + "' of config key '" + option->FullKey() +
                    "' does not read back as a " + option->type_name +
                    (why.empty() ? "" : " (" + why + ")"),
                {.key = option->FullKey()});
  }
  option->default_text = text;
  Option* raw = option.get();
  auto section = std::find_if(sections_.begin(), sections_.end(),
                              [&](const Section& s) { return s.name == raw->section; });
  if (section == sections_.end()) {
    sections_.push_back({raw->section, "", {}});
    section = std::prev(sections_.end());
  }
  section->options.push_back(raw);
  options_.push_back(std::move(option));
  return raw;
}

void ConfigSchema::OnResolved(std::function<void()> hook) { hooks_.push_back(std::move(hook)); }

std::string ConfigSchema::ChoiceTypeName(const std::vector<std::string>& names) {
  std::string type = "one of:";
  for (size_t i = 0; i < names.size(); ++i) type += (i == 0 ? " " : ", ") + names[i];
  return type;
}

OptionBuilder<std::string> ConfigSchema::AddChoice(std::string_view section, std::string_view key,
                                                   std::string* target,
                                                   const std::vector<std::string>& names,
                                                   std::string description) {
  std::vector<std::pair<std::string, std::string>> table;
  for (const std::string& name : names) table.emplace_back(name, name);
  return AddChoice<std::string>(section, key, target, std::move(table), std::move(description));
}

Option* ConfigSchema::Find(std::string_view full_key) const {
  for (const auto& option : options_) {
    if (option->FullKey() == full_key) return option.get();
  }
  return nullptr;
}

Option& ConfigSchema::Get(std::string_view full_key) const {
  Option* option = Find(full_key);
  if (option == nullptr) {
    throw Error(ErrorCode::kNotFound, "no config key '" + std::string(full_key) + "'",
                {.key = std::string(full_key), .hint = DidYouMean(Suggest(full_key))});
  }
  return *option;
}

bool ConfigSchema::Has(std::string_view full_key) const { return Find(full_key) != nullptr; }

bool ConfigSchema::HasSection(std::string_view section) const {
  return std::any_of(sections_.begin(), sections_.end(),
                     [&](const Section& s) { return s.name == section && !s.options.empty(); });
}

std::string ConfigSchema::TypeName(std::string_view full_key) const {
  return Get(full_key).type_name;
}
ConfigSource ConfigSchema::SourceOf(std::string_view full_key) const {
  return Get(full_key).source;
}
std::string ConfigSchema::ValueText(std::string_view full_key) const {
  return Get(full_key).render();
}

std::vector<const Option*> ConfigSchema::OrderedOptions() const {
  std::vector<const Option*> ordered;
  for (const Section& s : sections_)
    ordered.insert(ordered.end(), s.options.begin(), s.options.end());
  return ordered;
}

std::vector<std::string> ConfigSchema::Keys() const {
  std::vector<std::string> keys;
  for (const Option* option : OrderedOptions()) keys.push_back(option->FullKey());
  return keys;
}

namespace {

// Names other frameworks give to keys of ours (Keras, PyTorch, tf.data), for suggestions.
std::string_view OurName(std::string_view theirs) {
  static const std::pair<std::string_view, std::string_view> kNames[] = {
      {"learning_rate", "lr"},           {"num_epochs", "epochs"},
      {"lr_schedule", "schedule"},       {"nesterov_momentum", "nesterov"},
      {"num_workers", "parallel_calls"}, {"num_parallel_calls", "parallel_calls"},
      {"buffer_size", "shuffle_buffer"}};
  for (const auto& [their, our] : kNames) {
    if (their == theirs) return our;
  }
  return theirs;
}

}  // namespace

std::string ConfigSchema::Suggest(std::string_view full_key) const {
  std::string best;
  size_t best_distance = std::max<size_t>(2, full_key.size() / 3) + 1;
  const size_t dot = full_key.find('.');
  const std::string_view bare = dot == std::string_view::npos ? full_key : full_key.substr(dot + 1);
  const std::string_view ours = OurName(bare);
  for (const Option* option : OrderedOptions()) {
    const std::string candidate = option->FullKey();
    // The right key in the wrong section, or another framework's name for it, is as good a
    // guess as a typo.
    const bool same = option->key == bare || option->key == ours;
    const size_t distance = same ? 1 : EditDistance(full_key, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = candidate;
    }
  }
  return best;
}

void ConfigSchema::SetValue(Option& option, std::string_view text, const ConfigSource& source) {
  std::string why;
  if (!option.set(text, &why)) {
    throw Error(ErrorCode::kInvalidArgument,
                source.ToString() + ": bad value '" + std::string(text) + "' for " +
                    option.FullKey() + ": expected " + option.type_name +
                    (why.empty() ? "" : " (" + why + ")"),
                {.key = option.FullKey()});
  }
  option.source = source;
}

void ConfigSchema::Parse(const std::string& path, const std::vector<ConfigOverride>& overrides) {
  std::string text;
  if (!path.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {  // it would read as an empty config
      throw Error(ErrorCode::kInvalidArgument, "the config file is a directory",
                  {.file = path, .hint = "give the path of an INI file"});
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      throw Error(ErrorCode::kNotFound,
                  std::string("cannot open config file: ") + std::strerror(errno), {.file = path});
    }
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) {
      throw Error(ErrorCode::kIo, "cannot read config file", {.file = path});
    }
    text = buffer.str();
  }
  ParseString(text, path, overrides);
}

void ConfigSchema::ParseString(std::string_view text, const std::string& name,
                               const std::vector<ConfigOverride>& overrides) {
  // 1. Structure and line numbers: our scan (Boost reports no lines).
  const IniDocument doc = ScanIni(text, name);
  for (const IniSection& section : doc.sections) {
    if (!HasSection(section.name)) {
      std::string suggestion;
      for (const Section& s : sections_) {
        if (!s.options.empty() && EditDistance(s.name, section.name) <= 2) suggestion = s.name;
      }
      throw Error(ErrorCode::kInvalidArgument,
                  name + ":" + std::to_string(section.line) + ": unknown config section [" +
                      section.name + "]",
                  {.key = section.name,
                   .hint = suggestion.empty() ? "run with --help for the sections"
                                              : "did you mean [" + suggestion + "]?"});
    }
  }
  for (const IniEntry& entry : doc.entries) {
    if (Find(entry.FullKey()) == nullptr) {
      throw Error(ErrorCode::kInvalidArgument,
                  name + ":" + std::to_string(entry.line) + ": unknown config key '" +
                      entry.FullKey() + "'",
                  {.key = entry.FullKey(), .hint = DidYouMean(Suggest(entry.FullKey()))});
    }
  }

  // 2. Values: Boost.Program_options reads the same text; every key is declared as a string so
  // that the typed conversion (and its error message) stays ours.
  namespace po = boost::program_options;
  po::options_description description;
  for (const Option* option : OrderedOptions()) {
    description.add_options()(option->FullKey().c_str(), po::value<std::string>(), "");
  }
  std::istringstream in{std::string(text)};
  po::parsed_options parsed(&description);
  try {
    parsed = po::parse_config_file(in, description, /*allow_unregistered=*/false);
  } catch (const po::error& e) {
    throw Error(ErrorCode::kInvalidArgument, name + ": " + e.what());
  }
  if (parsed.options.size() != doc.entries.size()) {
    throw Error(ErrorCode::kInternal,
                name + ": Boost read " + std::to_string(parsed.options.size()) +
                    " keys, the line scan " + std::to_string(doc.entries.size()));
  }
  for (size_t i = 0; i < doc.entries.size(); ++i) {
    const IniEntry& entry = doc.entries[i];
    const po::option& read = parsed.options[i];
    if (read.string_key != entry.FullKey() || read.value.size() != 1) {
      throw Error(ErrorCode::kInternal, name + ":" + std::to_string(entry.line) + ": Boost read '" +
                                            read.string_key + "', the line scan '" +
                                            entry.FullKey() + "'");
    }
    SetValue(*Find(entry.FullKey()), read.value[0],
             {.kind = ConfigSource::Kind::kFile, .file = name, .line = entry.line});
  }

  // 3. Command-line overrides, in order.
  for (const ConfigOverride& override : overrides) {
    Option* option = Find(override.key);
    if (option == nullptr) {
      throw Error(
          ErrorCode::kInvalidArgument,
          "command line: unknown config key '" + override.key + "' (--" + override.key + ")",
          {.key = override.key, .hint = DidYouMean(Suggest(override.key))});
    }
    SetValue(*option, config_detail::Trim(override.value),
             {.kind = ConfigSource::Kind::kCommandLine});
  }

  // 4. Checks on every final value, defaults included.
  for (const Option* option : OrderedOptions()) {
    for (const auto& [passes, requirement] : option->checks) {
      if (!passes()) {
        throw Error(ErrorCode::kInvalidArgument,
                    option->source.ToString() + ": " + option->FullKey() + " = '" +
                        option->render() + "' " + requirement,
                    {.key = option->FullKey()});
      }
    }
  }
  for (const auto& hook : hooks_) hook();
}

std::string ConfigSchema::HelpText(
    const std::function<bool(const std::string& full_key)>& shown) const {
  size_t width = 0;
  for (const Option* option : OrderedOptions()) {
    width = std::max(width, option->key.size() + 3 + option->default_text.size());
  }
  width = std::min<size_t>(width, 40) + 4;
  std::ostringstream out;
  const auto listed = [&](const Option* option) {
    return !option->disowned && (!shown || shown(option->FullKey()));
  };
  for (const Section& s : sections_) {
    if (std::none_of(s.options.begin(), s.options.end(), listed)) continue;
    out << "\n[" << s.name << "]" << (s.description.empty() ? "" : "  " + s.description) << "\n";
    for (const Option* option : s.options) {
      if (!listed(option)) continue;
      std::string requirements = option->type_name;
      for (const auto& check : option->checks) requirements += ", " + check.second;
      const std::string head = "  " + option->key + " = " + option->default_text;
      out << (head.size() + 2 > width ? head + "\n" + std::string(width, ' ') : Pad(head, width))
          << option->description << " [" << requirements << "]\n";
    }
  }
  return out.str();
}

void ConfigSchema::ActsWhen(std::string_view full_key, std::function<bool()> acts) {
  Option* option = Find(full_key);
  if (option == nullptr) {
    throw Error(ErrorCode::kNotFound, "unknown config key '" + std::string(full_key) + "'",
                {.key = std::string(full_key)});
  }
  option->acts = std::move(acts);
}

void ConfigSchema::Disown(std::string_view full_key) {
  ActsWhen(full_key, [] { return false; });
  Find(full_key)->disowned = true;
}

std::string ConfigSchema::ResolvedTable(std::string_view all_keys_in) const {
  constexpr size_t kValueWidth = 60;
  size_t key_width = 3;
  size_t value_width = 5;
  std::vector<const Option*> ordered;
  size_t left_out = 0;
  for (const Option* option : OrderedOptions()) {
    if (!option->acts || option->acts()) {
      ordered.push_back(option);
    } else {
      ++left_out;
    }
  }
  for (const Option* option : ordered) {
    key_width = std::max(key_width, option->FullKey().size());
    value_width = std::max(value_width, std::min(kValueWidth, option->render().size()));
  }
  std::ostringstream out;
  out << "resolved configuration:\n";
  out << "  " << Pad("key", key_width) << "  " << Pad("value", value_width) << "  source\n";
  for (const Option* option : ordered) {
    out << "  " << Pad(option->FullKey(), key_width) << "  "
        << Pad(Shorten(option->render(), kValueWidth), value_width) << "  "
        << option->source.ToString() << "\n";
  }
  if (left_out > 0) {
    out << "  (" << left_out << " keys with no effect on this run left out; " << all_keys_in
        << ")\n";
  }
  return out.str();
}

std::string ConfigSchema::ResolvedIni() const {
  std::ostringstream out;
  out << "# shardflow resolved configuration: every key with the value used.\n";
  for (const Section& s : sections_) {
    if (s.options.empty()) continue;
    out << "\n[" << s.name << "]\n";
    for (const Option* option : s.options) {
      // Descriptions are free text; a line break in one would end the comment.
      std::string description = option->description;
      std::replace(description.begin(), description.end(), '\n', ' ');
      out << "# " << description << " (" << option->source.ToString() << ")\n";
      const std::string value = option->render();
      out << option->key << " =" << (value.empty() ? "" : " " + value) << "\n";
    }
  }
  return out.str();
}

void ConfigSchema::SaveResolved(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << ResolvedIni();
  out.close();
  if (!out) {
    throw Error(ErrorCode::kIo,
                std::string("cannot write resolved config: ") + std::strerror(errno),
                {.file = path});
  }
}

}  // namespace shardflow
