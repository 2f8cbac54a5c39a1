#include "io/table_stats.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace shardflow::io {
namespace {

std::string Double(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

[[noreturn]] void Bad(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "bad table statistics: " + what, {.file = source});
}

double GetDouble(simdjson::dom::object o, const char* key, const std::string& source) {
  double d = 0;
  simdjson::dom::element v;
  if (o[key].get(v)) Bad(source, std::string("no '") + key + "'");
  if (v.is_int64()) return static_cast<double>(int64_t(v));
  if (v.get_double().get(d)) Bad(source, std::string("'") + key + "' is not a number");
  return d;
}

}  // namespace

void NumericStats::Add(double x) {
  if (count == 0) {
    min = max = x;
  } else {
    min = std::min(min, x);
    max = std::max(max, x);
  }
  ++count;
  const double delta = x - mean;
  mean += delta / static_cast<double>(count);
  m2 += delta * (x - mean);
}

// Chan et al.: the merged mean and m2 of two parts from their counts, means and m2s.
void NumericStats::Merge(const NumericStats& o) {
  if (o.count == 0) return;
  if (count == 0) {
    *this = o;
    return;
  }
  const double n = static_cast<double>(count + o.count);
  const double delta = o.mean - mean;
  mean += delta * static_cast<double>(o.count) / n;
  m2 += o.m2 + delta * delta * static_cast<double>(count) * static_cast<double>(o.count) / n;
  count += o.count;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
}

double NumericStats::Std() const {
  return count > 0 ? std::sqrt(m2 / static_cast<double>(count)) : 0.0;
}

std::vector<std::string> ColumnStats::Vocabulary() const {
  std::vector<std::string> v;
  v.reserve(values.size());
  for (const auto& [value, n] : values) v.push_back(value);
  return v;
}

const ColumnStats* TableStats::Find(const std::string& name) const {
  for (const auto& c : columns) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

void TableStats::Merge(const TableStats& o) {
  if (columns.empty() && rows == 0) {
    *this = o;
    return;
  }
  if (o.columns.size() != columns.size()) {
    throw Error(ErrorCode::kInternal, "merging statistics of different tables");
  }
  rows += o.rows;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].name != o.columns[i].name) {
      throw Error(ErrorCode::kInternal, "merging statistics of different columns",
                  {.key = columns[i].name});
    }
    columns[i].numeric.Merge(o.columns[i].numeric);
    columns[i].missing += o.columns[i].missing;
    for (const auto& [value, n] : o.columns[i].values) columns[i].values[value] += n;
  }
}

void AppendJsonString(std::string* out, std::string_view text) {
  out->push_back('"');
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    } else {
      out->push_back(ch);
    }
  }
  out->push_back('"');
}

std::string TableStatsToJson(const TableStats& stats) {
  std::string j = "{\"rows\": " + std::to_string(stats.rows) +
                  ", \"missing_values\": \"a missing value (empty or an NA value) takes its "
                  "column's default, which these statistics count like any value; 'missing' "
                  "says how many\", \"columns\": [";
  for (size_t i = 0; i < stats.columns.size(); ++i) {
    const ColumnStats& c = stats.columns[i];
    j += i > 0 ? ",\n  {" : "\n  {";
    j += "\"name\": ";
    AppendJsonString(&j, c.name);
    j += ", \"type\": ";
    AppendJsonString(&j, c.type);
    j += std::string(", \"categorical\": ") + (c.categorical ? "true" : "false");
    j += ", \"missing\": " + std::to_string(c.missing);
    if (c.type != "string") {
      const NumericStats& s = c.numeric;
      j += ", \"count\": " + std::to_string(s.count) + ", \"mean\": " + Double(s.mean) +
           ", \"m2\": " + Double(s.m2) + ", \"std\": " + Double(s.Std());
      if (s.count > 0) j += ", \"min\": " + Double(s.min) + ", \"max\": " + Double(s.max);
    }
    if (c.categorical) {
      std::string vocab, counts;
      for (const auto& [value, n] : c.values) {
        if (!vocab.empty()) vocab += ", ", counts += ", ";
        AppendJsonString(&vocab, value);
        counts += std::to_string(n);
      }
      j += ", \"vocabulary\": [" + vocab + "], \"counts\": [" + counts + "]";
    }
    j += "}";
  }
  return j + "\n]}\n";
}

TableStats TableStatsFromJson(std::string_view json, const std::string& source) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(json.data(), json.size()).get(doc); err) {
    Bad(source, std::string("malformed JSON: ") + simdjson::error_message(err));
  }
  TableStats stats;
  simdjson::dom::object top;
  simdjson::dom::array columns;
  if (doc.get_object().get(top) || top["columns"].get_array().get(columns)) {
    Bad(source, "expected an object with a 'columns' array");
  }
  stats.rows = static_cast<int64_t>(GetDouble(top, "rows", source));
  for (simdjson::dom::element e : columns) {
    simdjson::dom::object o;
    if (e.get_object().get(o)) Bad(source, "a column is not an object");
    ColumnStats c;
    std::string_view text;
    if (o["name"].get_string().get(text)) Bad(source, "a column without a name");
    c.name = std::string(text);
    if (o["type"].get_string().get(text)) Bad(source, "column '" + c.name + "' has no type");
    c.type = std::string(text);
    bool categorical = false;
    if (!o["categorical"].get_bool().get(categorical)) c.categorical = categorical;
    int64_t missing = 0;
    if (!o["missing"].get_int64().get(missing)) c.missing = missing;
    if (c.type != "string") {
      c.numeric.count = static_cast<int64_t>(GetDouble(o, "count", source));
      c.numeric.mean = GetDouble(o, "mean", source);
      c.numeric.m2 = GetDouble(o, "m2", source);
      if (c.numeric.count > 0) {
        c.numeric.min = GetDouble(o, "min", source);
        c.numeric.max = GetDouble(o, "max", source);
      }
    }
    if (c.categorical) {
      simdjson::dom::array vocab, counts;
      if (o["vocabulary"].get_array().get(vocab) || o["counts"].get_array().get(counts) ||
          vocab.size() != counts.size()) {
        Bad(source, "column '" + c.name + "' needs a vocabulary and its counts, alike in length");
      }
      auto n = counts.begin();
      for (simdjson::dom::element v : vocab) {
        int64_t count = 0;
        if (v.get_string().get(text) || (*n).get_int64().get(count)) {
          Bad(source, "column '" + c.name + "': vocabulary entries are strings, counts integers");
        }
        c.values[std::string(text)] = count;
        ++n;
      }
    }
    stats.columns.push_back(std::move(c));
  }
  return stats;
}

void WriteTableStats(const std::string& path, const TableStats& stats) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << TableStatsToJson(stats);
    out.close();
    if (!out) throw Error(ErrorCode::kIo, "cannot write table statistics", {.file = tmp});
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw Error(ErrorCode::kIo, "cannot rename table statistics into place", {.file = path});
  }
}

TableStats ReadTableStats(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(
        ErrorCode::kNotFound, "no table statistics file",
        {.file = path, .hint = "shardflow-convert --input.format=table writes OUT.stats.json"});
  }
  std::stringstream text;
  text << in.rdbuf();
  return TableStatsFromJson(text.str(), path);
}

}  // namespace shardflow::io
