#include "io/pipeline/feature_columns.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>

#include "core/hash.hpp"

namespace shardflow::pipeline {
namespace {

constexpr int64_t kMaxBuckets = int64_t{1} << 24;  // ids travel as exact float32 integers
constexpr int64_t kMaxList = 4096;

std::vector<std::string> SplitAt(const std::string& s, char c) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    const size_t end = s.find(c, begin);
    parts.push_back(s.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

bool ParseInt(std::string_view s, int64_t* v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

// Where a value of feature `column` of `e` went wrong.
Error BadValue(const Element& e, const std::string& column, const std::string& what) {
  ErrorContext ctx = e.where.Context();
  ctx.key = column;
  return Error(ErrorCode::kInvalidArgument, "assemble: '" + column + "' " + what, ctx);
}

std::string_view Bytes(const Tensor& t) {
  return {static_cast<const char*>(t.raw_data()), t.byte_size()};
}

// The id of one value (text, or an integer when `is_int`), -1 when missing.
int64_t IdOf(const IdColumn& c, const Element& e, const std::string& column, std::string_view text,
             bool is_int, int64_t value) {
  if (is_int ? value == -1 : text.empty()) return -1;
  if (c.hashed) {
    const std::string decimal = is_int ? std::to_string(value) : std::string();
    const uint64_t h = Fnv1a64(is_int ? std::string_view(decimal) : text);
    return c.offset + static_cast<int64_t>(h % static_cast<uint64_t>(c.buckets));
  }
  if (!is_int && !ParseInt(text, &value)) {
    throw BadValue(
        e, column,
        "holds '" + std::string(text) + "', id=" + std::to_string(c.buckets) + " needs integers");
  }
  if (value < 0 || value >= c.buckets) {
    throw BadValue(e, column,
                   "holds id " + std::to_string(value) + ", outside id=" +
                       std::to_string(c.buckets) + "'s [0, " + std::to_string(c.buckets) + ")");
  }
  return c.offset + value;
}

// The values of a list feature as ids (missing ones left out).
void ListIds(const IdColumn& c, const Element& e, std::vector<int64_t>* ids) {
  const std::string& column = c.columns[0];
  const Tensor& t = e.Get(column);
  ids->clear();
  if (t.dtype() == DType::kUInt8 && t.rank() == 1) {
    const std::string_view s = Bytes(t);
    size_t begin = 0;
    while (begin <= s.size()) {
      const size_t end = std::min(s.find(c.separator, begin), s.size());
      const int64_t id = IdOf(c, e, column, s.substr(begin, end - begin), false, 0);
      if (id >= 0) ids->push_back(id);
      begin = end + 1;
    }
  } else if (t.dtype() == DType::kInt64) {
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      const int64_t id = IdOf(c, e, column, {}, true, t.data<int64_t>()[i]);
      if (id >= 0) ids->push_back(id);
    }
  } else {
    throw BadValue(e, column,
                   std::string("is ") + DTypeName(t.dtype()) + ShapeToString(t.shape()) +
                       ", a list needs a delimited string (uint8[n]) or int64 values");
  }
}

// One value of a single-valued feature: its text or integer.
void SingleValue(const Element& e, const std::string& column, std::string_view* text, bool* is_int,
                 int64_t* value) {
  const Tensor& t = e.Get(column);
  if (t.dtype() == DType::kUInt8 && t.rank() == 1) {
    *text = Bytes(t);
    *is_int = false;
  } else if (t.dtype() == DType::kInt64 && t.num_elements() == 1) {
    *value = t.data<int64_t>()[0];
    *is_int = true;
  } else if (t.dtype() == DType::kInt32 && t.num_elements() == 1) {
    *value = t.data<int32_t>()[0];
    *is_int = true;
  } else {
    throw BadValue(e, column,
                   std::string("is ") + DTypeName(t.dtype()) + ShapeToString(t.shape()) +
                       ", a categorical column needs a string (uint8[n]) or an integer scalar");
  }
}

}  // namespace

bool IsIdColumnKind(const std::string& kind) {
  return kind.starts_with("hash=") || kind.starts_with("id=") || kind.starts_with("ids=");
}

IdColumn ParseIdColumn(const std::string& name, const std::string& kind, const std::string& key,
                       const std::string& entry) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "bad assemble entry '" + entry + "': " + why,
                 {.key = key,
                  .hint = "name:hash=B | name:id=B | a*b:hash=B | "
                          "name:ids=L:hash=B|id=B[:truncate][:sep=C] (io/pipeline/"
                          "feature_columns.hpp)"});
  };
  auto count = [&](const std::string& part, const std::string& text, int64_t max) {
    int64_t v = 0;
    if (!ParseInt(text, &v) || v <= 0 || v > max) {
      throw bad(part + " needs a count in [1, " + std::to_string(max) + "], found '" + text + "'");
    }
    return v;
  };
  IdColumn c;
  c.columns = SplitAt(name, '*');
  for (const std::string& col : c.columns) {
    if (col.empty()) throw bad("an empty feature name in '" + name + "'");
  }
  bool rule = false;
  for (const std::string& part : SplitAt(kind, ':')) {
    const size_t eq = part.find('=');
    const std::string k = part.substr(0, eq),
                      v = eq == std::string::npos ? "" : part.substr(eq + 1);
    if ((k == "hash" || k == "id") && !rule) {
      c.hashed = k == "hash";
      c.buckets = count(k, v, kMaxBuckets);
      rule = true;
    } else if (k == "ids" && c.list == 0) {
      c.list = count(k, v, kMaxList);
    } else if (part == "truncate") {
      c.truncate = true;
    } else if (k == "sep" && v.size() == 1) {
      c.separator = v[0];
    } else {
      throw bad("unknown or repeated part '" + part + "'");
    }
  }
  if (!rule) throw bad("needs hash=B or id=B");
  if (c.columns.size() > 1 && (!c.hashed || c.list > 0)) {
    throw bad("a cross (a*b) takes hash=B and single values only");
  }
  if (c.list == 0 && (c.truncate || c.separator != '|')) {
    throw bad("truncate and sep= are for lists (ids=L)");
  }
  return c;
}

void WriteIds(const IdColumn& c, const Element& e, float* out) {
  if (c.list > 0) {
    thread_local std::vector<int64_t> ids;
    ListIds(c, e, &ids);
    if (static_cast<int64_t>(ids.size()) > c.list && !c.truncate) {
      throw BadValue(e, c.columns[0],
                     "holds " + std::to_string(ids.size()) +
                         " ids, more than ids=" + std::to_string(c.list) +
                         " (add :truncate to keep the first " + std::to_string(c.list) + ")");
    }
    for (int64_t i = 0; i < c.list; ++i) {
      out[i] = i < static_cast<int64_t>(ids.size())
                   ? static_cast<float>(ids[static_cast<size_t>(i)])
                   : -1.f;
    }
    return;
  }
  std::string_view text;
  bool is_int = false;
  int64_t value = 0;
  if (c.columns.size() == 1) {
    SingleValue(e, c.columns[0], &text, &is_int, &value);
    out[0] = static_cast<float>(IdOf(c, e, c.columns[0], text, is_int, value));
    return;
  }
  uint64_t h = kFnv1a64Offset;
  for (size_t i = 0; i < c.columns.size(); ++i) {
    SingleValue(e, c.columns[i], &text, &is_int, &value);
    if (is_int ? value == -1 : text.empty()) {
      out[0] = -1.f;
      return;
    }
    if (i > 0) h = Fnv1a64("\x1f", h);
    h = Fnv1a64(is_int ? std::string_view(std::to_string(value)) : text, h);
  }
  out[0] =
      static_cast<float>(c.offset + static_cast<int64_t>(h % static_cast<uint64_t>(c.buckets)));
}

std::string IdColumnDetail(const IdColumn& c) {
  std::string d = "ids [" + std::to_string(c.offset) + ", " + std::to_string(c.offset + c.buckets) +
                  ") " + (c.hashed ? "hash" : "identity");
  if (c.list > 0) d += ", lists of " + std::to_string(c.list) + (c.truncate ? " (truncate)" : "");
  return d;
}

std::vector<double> ParseBoundaries(const std::string& text, const std::string& key,
                                    const std::string& entry) {
  std::vector<double> b;
  for (const std::string& part : SplitAt(text, '|')) {
    double v = 0;
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() ||
        !std::isfinite(v) || (!b.empty() && v <= b.back())) {
      throw Error(ErrorCode::kInvalidArgument,
                  "bad assemble entry '" + entry + "': boundaries '" + text +
                      "' need finite numbers in strictly ascending order, found '" + part + "'",
                  {.key = key, .hint = "x:bucket=0|10|100"});
    }
    b.push_back(v);
  }
  return b;
}

int64_t BucketIndex(const std::vector<double>& boundaries, double v) {
  return std::upper_bound(boundaries.begin(), boundaries.end(), v) - boundaries.begin();
}

}  // namespace shardflow::pipeline
