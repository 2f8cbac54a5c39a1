#include "io/pipeline/sources/csv_stream_source.hpp"

#include <charconv>
#include <cstring>
#include <set>
#include <utility>

namespace shardflow::pipeline {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

template <typename T>
Tensor Scalar(DType dtype, T v) {
  Tensor t(dtype, {});
  *static_cast<T*>(t.raw_data()) = v;
  return t;
}

// `text` as a scalar tensor of `type` (strings: uint8[n]); nullopt when it does not parse.
std::optional<Tensor> ToTensor(CsvColumnType type, std::string_view text) {
  switch (type) {
    case CsvColumnType::kString: {
      Tensor t(DType::kUInt8, {static_cast<int64_t>(text.size())});
      if (!text.empty()) std::memcpy(t.raw_data(), text.data(), text.size());
      return t;
    }
    case CsvColumnType::kInt64: {
      int64_t v = 0;
      if (!ParseNumber(text, &v)) return std::nullopt;
      return Scalar(DType::kInt64, v);
    }
    case CsvColumnType::kFloat32: {
      float v = 0;
      if (!ParseNumber(text, &v)) return std::nullopt;
      return Scalar(DType::kFloat32, v);
    }
    case CsvColumnType::kFloat64: {
      double v = 0;
      if (!ParseNumber(text, &v)) return std::nullopt;
      return Scalar(DType::kFloat64, v);
    }
  }
  return std::nullopt;
}

class CsvStreamReader : public RecordReader {
 public:
  CsvStreamReader(const std::string& path, const ByteRange& range,
                  const CsvStreamSource::FileLayout& layout, const CsvSourceOptions& options,
                  const std::vector<Tensor>& defaults, io::CsvLineStarts* line_starts)
      : stream_(path,
                {.begin = range.begin,
                 .end = range.end,
                 .data_start = layout.data_start,
                 .data_start_line = layout.data_start_line},
                options.dialect, line_starts),
        layout_(layout),
        options_(options),
        defaults_(defaults) {}

  bool Next(Element* out) override {
    if (!stream_.Next(&record_)) return false;
    if (record_.fields.size() != layout_.num_fields) {
      const std::string at =
          record_.line >= 0 ? stream_.path() + ":" + std::to_string(record_.line)
                            : stream_.path() + " at byte offset " + std::to_string(record_.offset);
      throw Error(ErrorCode::kInvalidArgument,
                  at + ": " + std::to_string(record_.fields.size()) + " fields, expected " +
                      std::to_string(layout_.num_fields) +
                      (options_.header ? " (as the header)" : " (as column_names)"),
                  {.file = stream_.path(), .offset = record_.offset});
    }
    out->features.clear();
    out->features.reserve(options_.columns.size() + 1);
    Tensor missing;
    if (options_.mark_missing) {
      missing = Tensor(DType::kUInt8, {static_cast<int64_t>(options_.columns.size())});
      std::fill_n(missing.data<uint8_t>(), options_.columns.size(), uint8_t{0});
    }
    for (size_t c = 0; c < options_.columns.size(); ++c) {
      const CsvColumnSpec& spec = options_.columns[c];
      const size_t field = layout_.field_of_column[c];
      // Numbers ignore surrounding spaces; strings keep every byte.
      const std::string_view text =
          spec.type == CsvColumnType::kString ? record_.fields[field] : Trim(record_.fields[field]);
      if (IsMissing(text)) {
        if (!spec.default_value) Fail(field, spec, "missing value and the column has no default");
        out->features.emplace_back(spec.name, defaults_[c].Clone());
        if (options_.mark_missing) missing.data<uint8_t>()[c] = 1;
      } else if (std::optional<Tensor> value = ToTensor(spec.type, text)) {
        out->features.emplace_back(spec.name, std::move(*value));
      } else {
        Fail(field, spec,
             std::string("bad ") + CsvColumnTypeName(spec.type) + " value '" + std::string(text) +
                 "'");
      }
    }
    if (options_.mark_missing) out->features.emplace_back(kCsvMissingFeature, std::move(missing));
    out->where.offset = record_.offset;
    out->where.record = record_.line >= 1 ? record_.line - 1 : -1;
    return true;
  }

  ReaderPosition Position() const override {
    const io::CsvStreamPosition p = stream_.Position();
    return {p.offset, p.line};
  }
  void Seek(const ReaderPosition& p) override { stream_.Seek({p.offset, p.record}); }

 private:
  bool IsMissing(std::string_view text) const {
    if (text.empty()) return true;
    for (const auto& na : options_.na_values) {
      if (text == na) return true;
    }
    return false;
  }

  [[noreturn]] void Fail(size_t field, const CsvColumnSpec& spec, const std::string& what) const {
    throw Error(ErrorCode::kInvalidArgument,
                stream_.Where(record_, field) + " (column '" + spec.name + "'): " + what,
                {.file = stream_.path(), .offset = record_.offset, .key = spec.name});
  }

  io::CsvRecordStream stream_;
  const CsvStreamSource::FileLayout& layout_;
  const CsvSourceOptions& options_;
  const std::vector<Tensor>& defaults_;
  io::CsvRecord record_;
};

}  // namespace

const char* CsvColumnTypeName(CsvColumnType type) {
  switch (type) {
    case CsvColumnType::kInt64:
      return "int64";
    case CsvColumnType::kFloat32:
      return "float32";
    case CsvColumnType::kFloat64:
      return "float64";
    case CsvColumnType::kString:
      return "string";
  }
  return "?";
}

std::vector<CsvColumnSpec> ParseCsvColumns(const std::vector<std::string>& entries,
                                           const std::string& key) {
  std::vector<CsvColumnSpec> columns;
  std::set<std::string> names;
  for (const std::string& raw : entries) {
    const std::string entry(Trim(raw));
    if (entry.empty()) continue;
    auto bad = [&](const std::string& why) {
      return Error(ErrorCode::kInvalidArgument,
                   "bad CSV column '" + entry + "': " + why +
                       " (expected name:int64|float32|float64|string[=default])",
                   {.key = key});
    };
    const size_t colon = entry.find(':');
    if (colon == std::string::npos || colon == 0) throw bad("no name:type");
    CsvColumnSpec spec{.name = std::string(Trim(std::string_view(entry).substr(0, colon)))};
    std::string_view type = std::string_view(entry).substr(colon + 1);
    if (const size_t eq = type.find('='); eq != std::string_view::npos) {
      spec.default_value = std::string(Trim(type.substr(eq + 1)));
      type = type.substr(0, eq);
    }
    type = Trim(type);
    if (type == "int64") {
      spec.type = CsvColumnType::kInt64;
    } else if (type == "float32" || type == "float") {
      spec.type = CsvColumnType::kFloat32;
    } else if (type == "float64" || type == "double") {
      spec.type = CsvColumnType::kFloat64;
    } else if (type == "string" || type == "bytes") {
      spec.type = CsvColumnType::kString;
    } else {
      throw bad("unknown type '" + std::string(type) + "'");
    }
    if (spec.default_value && !ToTensor(spec.type, *spec.default_value)) {
      throw bad("the default is not a " + std::string(CsvColumnTypeName(spec.type)));
    }
    if (!names.insert(spec.name).second) throw bad("column named twice");
    columns.push_back(std::move(spec));
  }
  return columns;
}

CsvStreamSource::CsvStreamSource(std::vector<std::string> files, CsvSourceOptions options)
    : options_(std::move(options)) {
  if (options_.columns.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "format csv needs the columns to read",
                {.key = "csv_columns", .hint = "e.g. csv_columns = temp:float32=0, label:int64"});
  }
  if (!options_.header && options_.column_names.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "a CSV file without a header needs column_names",
                {.key = "csv_column_names"});
  }
  for (const auto& column : options_.columns) {
    defaults_.push_back(column.default_value ? *ToTensor(column.type, *column.default_value)
                                             : Tensor());
  }
  for (const auto& path : files) {
    infos_.push_back(StatFile(path));
    if (io::ResolveCompression(options_.dialect.compression, path) != io::Compression::kNone) {
      byte_ranges_ = false;
    }
    const io::CsvHeader header =
        io::ReadCsvHeader(path, options_.dialect, options_.header, options_.skip_lines);
    std::vector<std::string> names = header.fields;
    if (!options_.column_names.empty()) {
      if (options_.header && names.size() != options_.column_names.size()) {
        throw Error(ErrorCode::kInvalidArgument,
                    "the header has " + std::to_string(names.size()) + " columns, column_names " +
                        std::to_string(options_.column_names.size()),
                    {.file = path, .key = "csv_column_names"});
      }
      names = options_.column_names;
    }
    FileLayout layout{.data_start = header.data_start,
                      .data_start_line = header.data_start_line,
                      .num_fields = names.size()};
    // A file without any record (empty, blank or comments only) has no rows: nothing to map.
    const bool empty = options_.header && header.fields.empty();
    for (const auto& column : options_.columns) {
      if (empty) break;
      size_t i = 0;
      while (i < names.size() && names[i] != column.name) ++i;
      if (i == names.size()) {
        throw Error(ErrorCode::kNotFound,
                    "no column '" + column.name + "' in the CSV " +
                        (options_.column_names.empty() ? "header" : "column_names"),
                    {.file = path, .key = column.name});
      }
      layout.field_of_column.push_back(i);
    }
    layouts_.push_back(std::move(layout));
    line_starts_.push_back(std::make_unique<io::CsvLineStarts>());
  }
}

std::unique_ptr<RecordReader> CsvStreamSource::Open(size_t file_index,
                                                    const ByteRange& range) const {
  if (file_index >= infos_.size()) {
    throw Error(ErrorCode::kInternal, "file index out of range: " + std::to_string(file_index));
  }
  return std::make_unique<CsvStreamReader>(infos_[file_index].name, range, layouts_[file_index],
                                           options_, defaults_, line_starts_[file_index].get());
}

std::string CsvStreamSource::FormatDescription() const {
  std::string d = std::string("csv(compression=") +
                  io::CompressionName(options_.dialect.compression) +
                  ",header=" + (options_.header ? "1" : "0") +
                  ",delimiter=" + std::to_string(static_cast<int>(options_.dialect.delimiter)) +
                  ",comment=" + std::to_string(static_cast<int>(options_.dialect.comment)) +
                  ",quoted_newlines=" + (options_.dialect.quoted_newlines ? "1" : "0") + ",names=";
  for (const auto& n : options_.column_names) d.append(n).append(";");
  d += ",na=";
  for (const auto& n : options_.na_values) d.append(n).append(";");
  d += ",columns=";
  for (const auto& c : options_.columns) {
    d.append(c.name).append(":").append(CsvColumnTypeName(c.type));
    if (c.default_value) d.append("=").append(*c.default_value);
    d += ';';
  }
  return d + ")";
}

}  // namespace shardflow::pipeline
