#include "core/ini_scan.hpp"

#include <map>

#include "core/config_types.hpp"
#include "core/error.hpp"

namespace shardflow {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool IsName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsNameChar(c)) return false;
  }
  return true;
}

[[noreturn]] void Fail(const std::string& name, int line, const std::string& what,
                       const std::string& key = "", const std::string& hint = "") {
  throw Error(ErrorCode::kInvalidArgument, name + ":" + std::to_string(line) + ": " + what,
              {.key = key, .hint = hint});
}

}  // namespace

IniDocument ScanIni(std::string_view text, const std::string& name) {
  IniDocument doc;
  std::map<std::string, int> first_line;  // full key -> line
  std::map<std::string, size_t> section_index;
  std::string section;
  bool in_section = false;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = config_detail::Trim(line);
    if (line.empty()) continue;

    if (line.front() == '[') {
      if (line.back() != ']' || !IsName(line.substr(1, line.size() - 2))) {
        Fail(name, line_no, "malformed section header '" + std::string(line) + "'", "",
             "write [name] with a name of letters, digits, '_', '-' and no spaces");
      }
      section = std::string(line.substr(1, line.size() - 2));
      in_section = true;
      if (section_index.emplace(section, doc.sections.size()).second) {
        doc.sections.push_back({section, line_no});
      }
      continue;
    }

    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) {
      Fail(name, line_no, "malformed line '" + std::string(line) + "'", "",
           "expected 'key = value', a [section] header or a '#' comment");
    }
    const std::string key(config_detail::Trim(line.substr(0, eq)));
    const std::string value(config_detail::Trim(line.substr(eq + 1)));
    if (!IsName(key)) {
      Fail(name, line_no, "malformed key '" + key + "' in line '" + std::string(line) + "'", key,
           "a key is letters, digits, '_', '-' with no spaces");
    }
    if (!in_section) {
      Fail(name, line_no, "key '" + key + "' is outside any section", key,
           "put it under a header such as [train]");
    }
    IniEntry entry{section, key, value, line_no};
    const std::string full = entry.FullKey();
    if (const auto [it, inserted] = first_line.emplace(full, line_no); !inserted) {
      Fail(name, line_no,
           "duplicate key '" + full + "' (first set at line " + std::to_string(it->second) + ")",
           full, "keep one of the two lines");
    }
    doc.entries.push_back(std::move(entry));
  }
  return doc;
}

}  // namespace shardflow
