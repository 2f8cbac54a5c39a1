#include "io/pipeline/sources/json_lines_source.hpp"

#include <simdjson.h>

#include <cstring>
#include <set>
#include <sstream>
#include <utility>

namespace shardflow::pipeline {
namespace {

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string TypeName(const JsonField& f) {
  std::ostringstream t;
  t << (f.dtype == DType::kInt64 ? "int64" : f.dtype == DType::kUInt8 ? "bytes" : "float32");
  if (f.length > 0) t << '[' << f.length << ']';
  if (f.length < 0) t << "[*]";
  return t.str();
}

class JsonLinesReader : public RecordReader {
 public:
  JsonLinesReader(const std::string& path, const ByteRange& range, const JsonLinesOptions& o,
                  std::shared_ptr<SourceCounters> counters)
      : cursor_(path, range,
                {.compression = o.compression,
                 .header_lines = o.header_lines,
                 .exact_line_numbers = o.exact_line_numbers}),
        options_(o),
        counters_(std::move(counters)) {}

  bool Next(Element* out) override {
    std::string_view text;
    uint64_t offset = 0;
    int64_t line = 0;
    while (cursor_.Next(&text, &offset, &line)) {
      if (options_.skip_blank_lines && text.find_first_not_of(" \t") == std::string_view::npos) {
        continue;
      }
      try {
        Parse(text, offset, line, out);
        out->where.record = line;
        out->where.offset = offset;
        return true;
      } catch (const Error& e) {
        if (options_.on_error == OnError::kFail || e.code() != ErrorCode::kDataLoss) throw;
        CountSkip(*counters_, e.what());
      }
    }
    return false;
  }
  ReaderPosition Position() const override { return cursor_.Position(); }
  void Seek(const ReaderPosition& p) override { cursor_.Seek(p); }

 private:
  [[noreturn]] void Fail(const std::string& what, uint64_t offset, int64_t line,
                         const std::string& field) const {
    const std::string where = line >= 0 ? "line " + std::to_string(line + 1)
                                        : "line at byte offset " + std::to_string(offset);
    ErrorContext ctx{.file = cursor_.path(), .offset = offset, .key = field};
    if (line >= 0) ctx.record = line;
    std::string message = where;
    if (!field.empty()) message.append(", field '").append(field).append("'");
    message.append(": ").append(what);
    throw Error(ErrorCode::kDataLoss, message, ctx);
  }

  // A number as double (integers too); false when the value is not a number.
  static bool AsDouble(simdjson::dom::element v, double* out) {
    switch (v.type()) {
      case simdjson::dom::element_type::DOUBLE:
        *out = double(v);
        return true;
      case simdjson::dom::element_type::INT64:
        *out = static_cast<double>(int64_t(v));
        return true;
      case simdjson::dom::element_type::UINT64:
        *out = static_cast<double>(uint64_t(v));
        return true;
      default:
        return false;
    }
  }

  void Parse(std::string_view text, uint64_t offset, int64_t line, Element* out) {
    // simdjson reads up to SIMDJSON_PADDING bytes past the end: parse from a padded copy.
    if (padded_.size() < text.size() + simdjson::SIMDJSON_PADDING) {
      padded_.resize(text.size() + simdjson::SIMDJSON_PADDING);
    }
    std::memcpy(padded_.data(), text.data(), text.size());
    std::memset(padded_.data() + text.size(), 0, simdjson::SIMDJSON_PADDING);
    simdjson::dom::element doc;
    if (auto err = parser_.parse(padded_.data(), text.size(), false).get(doc); err) {
      Fail(std::string("malformed JSON: ") + simdjson::error_message(err), offset, line, "");
    }
    simdjson::dom::object object;
    if (doc.get_object().get(object)) Fail("not a JSON object", offset, line, "");
    out->features.clear();
    for (const JsonField& f : options_.schema) {
      simdjson::dom::element v;
      if (object[f.name].get(v)) Fail("missing field", offset, line, f.name);
      if (f.dtype == DType::kUInt8) {
        std::string_view s;
        if (v.get_string().get(s)) Fail("expected a string (bytes)", offset, line, f.name);
        Tensor t(DType::kUInt8, {static_cast<int64_t>(s.size())});
        if (!s.empty()) std::memcpy(t.raw_data(), s.data(), s.size());
        out->features.emplace_back(f.name, std::move(t));
        continue;
      }
      simdjson::dom::array array;
      if (f.length != 0 && v.get_array().get(array)) {
        Fail(f.length > 0 ? "expected an array of " + std::to_string(f.length) + " numbers"
                          : std::string("expected an array of numbers"),
             offset, line, f.name);
      }
      if (f.length > 0 && static_cast<int64_t>(array.size()) != f.length) {
        Fail("expected " + std::to_string(f.length) + " numbers, got " +
                 std::to_string(array.size()),
             offset, line, f.name);
      }
      Tensor t(f.dtype, f.length == 0 ? Shape{} : Shape{static_cast<int64_t>(array.size())});
      auto put = [&](simdjson::dom::element x, int64_t i) {
        if (f.dtype == DType::kInt64) {
          int64_t n = 0;
          if (x.get_int64().get(n)) {
            Fail(std::string("expected an integer") + (f.length != 0 ? " array element" : ""),
                 offset, line, f.name);
          }
          t.data<int64_t>()[i] = n;
        } else {
          double d = 0;
          if (!AsDouble(x, &d)) {
            Fail(std::string("expected a number") + (f.length != 0 ? " array element" : ""), offset,
                 line, f.name);
          }
          t.data<float>()[i] = static_cast<float>(d);
        }
      };
      if (f.length == 0) {
        put(v, 0);
      } else {
        int64_t i = 0;
        for (simdjson::dom::element x : array) put(x, i++);
      }
      out->features.emplace_back(f.name, std::move(t));
    }
  }

  LineCursor cursor_;
  const JsonLinesOptions& options_;
  std::shared_ptr<SourceCounters> counters_;
  simdjson::dom::parser parser_;
  std::vector<char> padded_;
};

}  // namespace

std::vector<JsonField> ParseJsonSchema(const std::string& text, const std::string& key) {
  std::vector<JsonField> fields;
  std::stringstream in(text);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    entry = Trim(entry);
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    auto bad = [&](const std::string& why) {
      return Error(ErrorCode::kInvalidArgument,
                   "bad schema entry '" + entry + "': " + why +
                       " (expected name:int64|float32|bytes|int64[N]|float32[N]|int64[*]|"
                       "float32[*])",
                   {.key = key});
    };
    if (colon == std::string::npos || colon == 0) throw bad("no name:type");
    JsonField f{.name = Trim(entry.substr(0, colon))};
    std::string type = Trim(entry.substr(colon + 1));
    if (const size_t open = type.find('['); open != std::string::npos) {
      if (type.back() != ']') throw bad("unclosed [");
      try {
        size_t used = 0;
        const std::string digits = type.substr(open + 1, type.size() - open - 2);
        f.length = digits == "*" ? -1 : std::stoll(digits, &used);
        if (digits != "*" && (used != digits.size() || f.length <= 0)) {
          throw bad("length must be > 0 or *");
        }
      } catch (const std::logic_error&) {
        throw bad("length must be a number");
      }
      type = type.substr(0, open);
      if (type == "bytes") throw bad("bytes cannot be an array");
    }
    if (type == "int64") {
      f.dtype = DType::kInt64;
    } else if (type == "float32" || type == "float") {
      f.dtype = DType::kFloat32;
    } else if (type == "bytes" || type == "string") {
      f.dtype = DType::kUInt8;
    } else {
      throw bad("unknown type '" + type + "'");
    }
    fields.push_back(std::move(f));
  }
  return fields;
}

JsonLinesSource::JsonLinesSource(std::vector<std::string> files, JsonLinesOptions options)
    : options_(std::move(options)) {
  if (options_.schema.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "JSON lines need a schema of at least one field",
                {.key = "schema"});
  }
  std::set<std::string> names;
  for (const auto& f : options_.schema) {
    if (f.name.empty() || !names.insert(f.name).second) {
      throw Error(ErrorCode::kInvalidArgument, "schema field names must be unique and non-empty",
                  {.key = "schema." + f.name});
    }
    if (f.dtype != DType::kInt64 && f.dtype != DType::kFloat32 && f.dtype != DType::kUInt8) {
      throw Error(ErrorCode::kInvalidArgument, "schema types are int64, float32 or bytes",
                  {.key = "schema." + f.name});
    }
  }
  for (const auto& f : files) {
    infos_.push_back(StatFile(f));
    if (io::ResolveCompression(options_.compression, f) != io::Compression::kNone) {
      byte_ranges_ = false;
    }
  }
}

std::unique_ptr<RecordReader> JsonLinesSource::Open(size_t file_index,
                                                    const ByteRange& range) const {
  if (file_index >= infos_.size()) {
    throw Error(ErrorCode::kInternal, "file index out of range: " + std::to_string(file_index));
  }
  return std::make_unique<JsonLinesReader>(infos_[file_index].name, range, options_, counters_);
}

std::string JsonLinesSource::FormatDescription() const {
  std::string d = std::string("jsonl(compression=") + io::CompressionName(options_.compression) +
                  ",header_lines=" + std::to_string(options_.header_lines) +
                  ",on_error=" + OnErrorName(options_.on_error) + ",schema=";
  for (size_t i = 0; i < options_.schema.size(); ++i) {
    if (i > 0) d += ';';
    d.append(options_.schema[i].name).append(":").append(TypeName(options_.schema[i]));
  }
  return d + ")";
}

std::shared_ptr<const RecordSource> OpenJsonLinesSource(const std::vector<std::string>& files,
                                                        const JsonLinesOptions& options) {
  return std::make_shared<JsonLinesSource>(files, options);
}

}  // namespace shardflow::pipeline
