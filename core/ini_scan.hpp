// A line-by-line scan of an INI config file that keeps line numbers.
//
// Boost.Program_options reads the values of a config file but reports neither line numbers nor
// keys outside a section, and it rejects a duplicate only when it is stored. ScanIni walks the
// same syntax and records where every section header and key is, so the config layer can name
// file:line in each error. The syntax is exactly the subset Boost's config file parser reads:
//   - everything from '#' to the end of a line is a comment; blank lines are ignored;
//   - "[name]" opens a section (name: letters, digits, '_', '-', '.', no spaces);
//   - "key = value" sets section.key; key and value are trimmed of spaces, tabs and '\r';
//   - anything else (no '=', an empty key, a key outside any section) is an error.
// Thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace shardflow {

struct IniEntry {
  std::string section;  // without brackets
  std::string key;      // without the section prefix
  std::string value;    // trimmed
  int line = 0;         // 1-based
  std::string FullKey() const { return section + "." + key; }
};

struct IniSection {
  std::string name;
  int line = 0;  // line of the first header that opened it
};

struct IniDocument {
  std::vector<IniEntry> entries;     // in file order
  std::vector<IniSection> sections;  // each name once, in order of first appearance
};

// Scans `text`; `name` (the file's path) appears in errors.
// Throws Error(kInvalidArgument) "NAME:LINE: ..." for a malformed line, a malformed section
// header, a key outside any section, or a key set twice (naming the line of the first).
IniDocument ScanIni(std::string_view text, const std::string& name);

}  // namespace shardflow
