#include "io/csv.hpp"

#include <algorithm>
#include <charconv>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

namespace shardflow::io {

const char* CsvTypeName(CsvType type) {
  switch (type) {
    case CsvType::kInt64:
      return "int64";
    case CsvType::kFloat32:
      return "float32";
    case CsvType::kFloat64:
      return "float64";
    case CsvType::kString:
      return "string";
  }
  return "?";
}

const CsvColumnData& CsvTable::operator[](const std::string& name) const {
  for (const auto& c : columns) {
    if (c.name == name) return c;
  }
  throw Error(ErrorCode::kNotFound, "no column '" + name + "' was read from the CSV file",
              {.key = name});
}

namespace {

// Splits CSV text into records of fields.
//
// The scanner walks the text once. An unquoted field is a view into the text up to the next
// delimiter, CR or LF. A quoted field is a view into the text between its quotes when it holds
// no escaped quote, and otherwise an unescaped copy kept in `unescaped_` (stable addresses:
// a deque) until the next record. `line_` counts LFs seen so far, including those inside
// quoted fields, so every error can name the physical line.
class Tokenizer {
 public:
  Tokenizer(std::string_view text, const std::string& source, char delimiter)
      : text_(text), source_(source), delim_(delimiter) {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // UTF-8 byte order mark
  }

  // Reads the next non-blank record into `fields`; false at the end of the text. `names`
  // (may be empty) names columns in errors.
  bool Next(std::vector<std::string_view>* fields, const std::vector<std::string>& names) {
    unescaped_.clear();
    for (;;) {
      if (pos_ >= text_.size()) return false;
      record_line_ = line_;
      fields->clear();
      if (text_[pos_] == '\n' || text_[pos_] == '\r') {  // blank line
        SkipLineEnd();
        continue;
      }
      for (;;) {
        fields->push_back(ReadField(fields->size(), names));
        if (pos_ >= text_.size()) return true;
        const char c = text_[pos_];
        if (c == delim_) {
          ++pos_;
          if (pos_ >= text_.size()) {  // "a,b," at the very end: a last empty field
            fields->push_back(std::string_view());
            return true;
          }
          continue;
        }
        SkipLineEnd();
        return true;
      }
    }
  }

  int64_t record_line() const { return record_line_; }

 private:
  void SkipLineEnd() {
    if (text_[pos_] == '\r') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
    ++line_;
  }

  std::string ColumnLabel(size_t index, const std::vector<std::string>& names) const {
    std::string label = "column " + std::to_string(index + 1);
    if (index < names.size()) label += " ('" + names[index] + "')";
    return label;
  }

  [[noreturn]] void Fail(ErrorCode code, const std::string& what, int64_t line, size_t index,
                         const std::vector<std::string>& names) const {
    throw Error(code, what + " at line " + std::to_string(line) + ", " + ColumnLabel(index, names),
                {.file = source_,
                 .offset = pos_,
                 .key = index < names.size() ? names[index] : std::string()});
  }

  std::string_view ReadField(size_t index, const std::vector<std::string>& names) {
    if (text_[pos_] != '"') {
      // Unquoted: up to the delimiter or the line end. A quote here breaks RFC 4180.
      const size_t start = pos_;
      while (pos_ < text_.size()) {
        const char c = text_[pos_];
        if (c == delim_ || c == '\n' || c == '\r') break;
        if (c == '"')
          Fail(ErrorCode::kInvalidArgument, "quote inside an unquoted field", line_, index, names);
        ++pos_;
      }
      return text_.substr(start, pos_ - start);
    }
    const int64_t open_line = line_;
    const size_t start = ++pos_;
    std::string* copy = nullptr;
    size_t segment = start;
    for (;;) {
      const size_t q = text_.find('"', pos_);
      if (q == std::string_view::npos) {
        pos_ = text_.size();
        Fail(ErrorCode::kDataLoss,
             "unterminated quoted field (opened at line " + std::to_string(open_line) +
                 ") at the end of the file",
             line_, index, names);
      }
      for (size_t i = pos_; i < q; ++i) line_ += text_[i] == '\n';
      if (q + 1 < text_.size() && text_[q + 1] == '"') {  // "" is one quote
        if (copy == nullptr) copy = &unescaped_.emplace_back();
        copy->append(text_.substr(segment, q + 1 - segment));
        pos_ = segment = q + 2;
        continue;
      }
      pos_ = q + 1;
      if (pos_ < text_.size() && text_[pos_] != delim_ && text_[pos_] != '\n' &&
          text_[pos_] != '\r') {
        Fail(ErrorCode::kInvalidArgument,
             std::string("unexpected '") + text_[pos_] + "' after a closing quote", line_, index,
             names);
      }
      if (copy == nullptr) return text_.substr(start, q - start);
      copy->append(text_.substr(segment, q - segment));
      return *copy;
    }
  }

  std::string_view text_;
  const std::string& source_;
  char delim_;
  size_t pos_ = 0;
  int64_t line_ = 1;
  int64_t record_line_ = 1;
  std::deque<std::string> unescaped_;
};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses all of `text` as a number of type T; false when it is not one.
template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  text = Trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

// One selected column while it is being filled.
struct Builder {
  CsvColumn spec;
  size_t file_index = 0;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::vector<double> doubles;
  std::vector<std::string> strings;
  int64_t default_int = 0;
  float default_float = 0;
  double default_double = 0;

  // Appends `field`; returns false when it is malformed. `missing` is set for an empty
  // numeric field with no default.
  bool Append(std::string_view field, bool* missing) {
    *missing = false;
    if (spec.type == CsvType::kString) {
      strings.emplace_back(field);
      return true;
    }
    const bool empty = Trim(field).empty();
    if (empty && !spec.default_value) {
      *missing = true;
      return false;
    }
    switch (spec.type) {
      case CsvType::kInt64:
        ints.push_back(default_int);
        return empty || ParseNumber(field, &ints.back());
      case CsvType::kFloat32:
        floats.push_back(default_float);
        return empty || ParseNumber(field, &floats.back());
      case CsvType::kFloat64:
        doubles.push_back(default_double);
        return empty || ParseNumber(field, &doubles.back());
      case CsvType::kString:
        break;
    }
    return true;
  }

  template <typename T>
  static Tensor ToTensor(const std::vector<T>& v) {
    Tensor t(DTypeOf<T>(), {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<T>());
    return t;
  }

  CsvColumnData Finish() {
    CsvColumnData c{.name = spec.name, .type = spec.type};
    if (spec.type == CsvType::kInt64) c.values = ToTensor(ints);
    if (spec.type == CsvType::kFloat32) c.values = ToTensor(floats);
    if (spec.type == CsvType::kFloat64) c.values = ToTensor(doubles);
    if (spec.type == CsvType::kString) c.strings = std::move(strings);
    return c;
  }
};

}  // namespace

CsvTable ParseCsv(std::string_view text, const std::string& source, const CsvOptions& options) {
  if (options.delimiter == '"' || options.delimiter == '\n' || options.delimiter == '\r') {
    throw Error(ErrorCode::kInvalidArgument, "CSV delimiter cannot be a quote or a line break",
                {.file = source});
  }
  Tokenizer tokens(text, source, options.delimiter);
  std::vector<std::string_view> fields;
  CsvTable table;
  if (!tokens.Next(&fields, {})) {
    throw Error(ErrorCode::kInvalidArgument, "CSV file has no header row", {.file = source});
  }
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < fields.size(); ++i) {
    table.header.emplace_back(Trim(fields[i]));
    if (!index.emplace(table.header.back(), i).second) {
      throw Error(ErrorCode::kInvalidArgument,
                  "duplicate column name '" + table.header.back() + "' in the header",
                  {.file = source, .key = table.header.back()});
    }
  }
  std::vector<CsvColumn> wanted = options.columns;
  if (wanted.empty()) {
    for (const auto& name : table.header) wanted.push_back({name, CsvType::kFloat64});
  }
  std::vector<Builder> builders;
  std::vector<int> slot_of(table.header.size(), -1);  // file column -> builder, -1 if unread
  for (const CsvColumn& col : wanted) {
    auto it = index.find(col.name);
    if (it == index.end()) {
      std::string names;
      for (const auto& n : table.header) names += (names.empty() ? "" : ", ") + n;
      throw Error(ErrorCode::kNotFound, "no column '" + col.name + "' in the CSV header",
                  {.file = source, .key = col.name, .hint = "columns there: " + names});
    }
    if (slot_of[it->second] != -1) {
      throw Error(ErrorCode::kInvalidArgument, "column '" + col.name + "' is selected twice",
                  {.file = source, .key = col.name});
    }
    Builder b{.spec = col, .file_index = it->second};
    if (col.default_value && col.type != CsvType::kString) {
      const bool ok = col.type == CsvType::kInt64 ? ParseNumber(*col.default_value, &b.default_int)
                      : col.type == CsvType::kFloat32
                          ? ParseNumber(*col.default_value, &b.default_float)
                          : ParseNumber(*col.default_value, &b.default_double);
      if (!ok) {
        throw Error(ErrorCode::kInvalidArgument,
                    "default value '" + *col.default_value + "' of column '" + col.name +
                        "' is not a valid " + CsvTypeName(col.type),
                    {.file = source, .key = col.name});
      }
    }
    slot_of[it->second] = static_cast<int>(builders.size());
    builders.push_back(std::move(b));
  }
  while (tokens.Next(&fields, table.header)) {
    const int64_t line = tokens.record_line();
    if (fields.size() != table.header.size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "record at line " + std::to_string(line) + " has " +
                      std::to_string(fields.size()) + " fields, the header has " +
                      std::to_string(table.header.size()),
                  {.file = source, .record = table.rows});
    }
    for (size_t i = 0; i < fields.size(); ++i) {
      if (slot_of[i] < 0) continue;
      Builder& b = builders[static_cast<size_t>(slot_of[i])];
      bool missing = false;
      if (!b.Append(fields[i], &missing)) {
        const std::string where = " at line " + std::to_string(line) + ", column " +
                                  std::to_string(i + 1) + " ('" + b.spec.name + "')";
        throw Error(
            ErrorCode::kInvalidArgument,
            missing ? "missing " + std::string(CsvTypeName(b.spec.type)) + " value" + where
                    : "bad " + std::string(CsvTypeName(b.spec.type)) + " value '" +
                          std::string(fields[i]) + "'" + where,
            {.file = source,
             .record = table.rows,
             .key = b.spec.name,
             .hint = missing ? "give the column a default to fill missing values" : std::string()});
      }
    }
    ++table.rows;
  }
  for (Builder& b : builders) table.columns.push_back(b.Finish());
  return table;
}

CsvTable ReadCsv(const std::string& path, const CsvOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(std::filesystem::exists(path) ? ErrorCode::kIo : ErrorCode::kNotFound,
                std::filesystem::exists(path) ? "cannot open CSV file" : "CSV file does not exist",
                {.file = path});
  }
  std::string text;
  in.seekg(0, std::ios::end);
  text.resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (!in) throw Error(ErrorCode::kIo, "cannot read CSV file", {.file = path});
  return ParseCsv(text, path, options);
}

}  // namespace shardflow::io
