#include "io/pipeline/assemble.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <set>

#include "io/pipeline/feature_columns.hpp"
#include "io/pipeline/feature_spec.hpp"
#include "io/table_stats.hpp"
#include "io/vocabulary_file.hpp"

namespace shardflow::pipeline {
namespace {

constexpr int64_t kMaxIdSpace = int64_t{1} << 24;  // ids travel as exact float32 integers

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::string Short(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// The value of element i of a numeric tensor as double.
double ValueAt(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return t.data<float>()[i];
    case DType::kFloat64:
      return t.data<double>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kUInt8:
      return t.data<uint8_t>()[i];
  }
  return 0;
}

}  // namespace

void RegisterAssembleOptions(ConfigSchema& s, const std::string& sec, AssembleConfig* c) {
  s.Add(sec, "assemble", &c->inputs,
        "features concatenated into one float32 input, in order: name | name:norm | name:log1p | "
        "name:onehot[=VOCAB_FILE] | name:index[=VOCAB_FILE] | name:bucket=B1|B2.. | "
        "name:hash=B | name:id=B | a*b:hash=B | name:ids=L:hash=B|id=B[:truncate] ('' none)");
  s.Add(sec, "assemble_feature", &c->feature, "name of the assembled feature").NonEmpty();
  s.Add(sec, "assemble_stats", &c->stats,
        "table statistics (OUT.stats.json of shardflow-convert) for :norm and :onehot");
}

Assembler::Assembler(const AssembleConfig& config, const std::vector<std::string>& features,
                     const std::string& section)
    : feature_(config.feature) {
  std::map<std::string, int64_t> widths;
  for (const auto& spec : ParseFeatureSpecs(features, section + ".features").features) {
    widths[spec.name] = NumElements(spec.shape);
  }
  std::optional<io::TableStats> stats;
  const StatsFn need_stats = [&](const std::string& entry) -> const io::TableStats& {
    if (config.stats.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "assemble entry '" + entry + "' needs statistics",
                  {.key = section + ".assemble_stats",
                   .hint = "the OUT.stats.json that shardflow-convert --input.format=table wrote"});
    }
    if (!stats) stats = io::ReadTableStats(config.stats);
    return *stats;
  };
  std::set<std::string> seen;
  for (const std::string& raw : config.inputs) {
    const std::string entry = Trim(raw);
    if (entry.empty()) continue;
    Entry e = ParseEntry(entry, config.stats, widths, need_stats, section + ".assemble");
    if (!seen.insert(e.slice.column).second) {
      throw Error(ErrorCode::kInvalidArgument,
                  "bad assemble entry '" + entry + "': feature listed twice",
                  {.key = section + ".assemble"});
    }
    if (e.ids) {
      e.ids->offset = id_space_;
      id_space_ += e.ids->buckets;
      e.slice.detail = IdColumnDetail(*e.ids);
      if (id_space_ > kMaxIdSpace) {
        throw Error(ErrorCode::kInvalidArgument,
                    "the id columns' buckets add up to " + std::to_string(id_space_) +
                        ", more than the 2^24 ids a float32 slot holds exactly",
                    {.key = section + ".assemble"});
      }
    }
    for (const std::string& c : e.ids ? e.ids->columns : std::vector<std::string>{e.slice.column}) {
      if (std::find(consumed_.begin(), consumed_.end(), c) == consumed_.end())
        consumed_.push_back(c);
    }
    width_ += e.slice.width;
    layout_.push_back(e.slice);
    entries_.push_back(std::move(e));
  }
}

Assembler::Entry Assembler::ParseEntry(const std::string& entry, const std::string& stats_path,
                                       const std::map<std::string, int64_t>& widths,
                                       const StatsFn& need_stats, const std::string& key) const {
  auto bad = [&](const std::string& why) {
    return Error(
        ErrorCode::kInvalidArgument, "bad assemble entry '" + entry + "': " + why,
        {.key = key,
         .hint =
             "name | name:norm | name:log1p | name:onehot[=VOCAB_FILE] | name:index[=VOCAB_FILE] | "
             "name:bucket=B1|B2.. | name:hash=B | name:id=B | a*b:hash=B | "
             "name:ids=L:hash=B"});
  };
  Entry e;
  const size_t colon = entry.find(':');
  e.slice.column = Trim(entry.substr(0, colon));
  if (e.slice.column.empty()) throw bad("no feature name");
  std::string kind = colon == std::string::npos ? "raw" : Trim(entry.substr(colon + 1));
  e.slice.begin = width_;
  if (IsIdColumnKind(kind)) {
    e.ids = ParseIdColumn(e.slice.column, kind, key, entry);
    e.slice.kind = e.ids->columns.size() > 1 ? "cross"
                   : e.ids->list > 0         ? "list"
                   : e.ids->hashed           ? "hash"
                                             : "identity";
    e.slice.width = e.ids->width();
    return e;
  }
  if (kind.starts_with("bucket=")) {
    e.boundaries = ParseBoundaries(kind.substr(7), key, entry);
    e.slice.kind = "bucket";
    e.slice.width = static_cast<int64_t>(e.boundaries.size()) + 1;
    e.slice.detail = std::to_string(e.slice.width) + " ranges";
    return e;
  }
  std::string file;
  if (const size_t eq = kind.find('='); eq != std::string::npos) {
    file = Trim(kind.substr(eq + 1));
    kind = Trim(kind.substr(0, eq));
    if ((kind != "onehot" && kind != "index") || file.empty()) {
      throw bad("only onehot and index take =VOCAB_FILE");
    }
  }
  e.slice.kind = kind;
  if (kind == "raw" || kind == "log1p") {
    const auto it = widths.find(e.slice.column);
    e.slice.width = it == widths.end() ? 1 : it->second;
  } else if (kind == "norm") {
    const io::ColumnStats* c = need_stats(entry).Find(e.slice.column);
    if (c == nullptr || c->type == "string" || c->numeric.count == 0) {
      throw bad("no numeric statistics for '" + e.slice.column + "' in " + stats_path);
    }
    e.slice.width = 1;
    e.mean = c->numeric.mean;
    const double sd = c->numeric.Std();
    e.scale = sd > 0 ? 1.0 / sd : 1.0;
    e.slice.detail = "mean=" + Short(c->numeric.mean) + " std=" + Short(sd);
  } else if (kind == "onehot" || kind == "index") {
    std::vector<std::string> words;
    if (!file.empty()) {
      words = io::ReadVocabularyFile(file, key);
      e.slice.detail = "vocabulary " + file + ": ";
    } else {
      const io::ColumnStats* c = need_stats(entry).Find(e.slice.column);
      if (c == nullptr || !c->categorical) {
        throw bad("no vocabulary for '" + e.slice.column + "' in " + stats_path);
      }
      words = c->Vocabulary();
      e.value_is_index = c->type == "string";
    }
    for (size_t i = 0; i < words.size(); ++i) {
      if (!e.vocabulary.emplace(words[i], static_cast<int64_t>(i)).second) {
        throw bad("vocabulary lists '" + words[i] + "' twice");
      }
    }
    // onehot: one slot per entry and the oov slot; index: one slot holding 0..V (V = oov), the
    // input of an embedding:V+1:D layer.
    e.slice.width = kind == "index" ? 1 : static_cast<int64_t>(words.size()) + 1;
    e.slice.detail += std::to_string(words.size()) + " + oov";
  } else {
    throw bad("unknown kind '" + kind + "'");
  }
  return e;
}

void Assembler::Apply(Element& el) const {
  Tensor out(DType::kFloat32, {width_});
  float* o = out.data<float>();
  for (const Entry& e : entries_) {
    if (e.ids) {
      WriteIds(*e.ids, el, o + e.slice.begin);
      continue;
    }
    const Tensor& t = el.Get(e.slice.column);
    if (!e.boundaries.empty()) {
      if (t.num_elements() != 1 || t.dtype() == DType::kUInt8) {
        ErrorContext ctx = el.where.Context();
        ctx.key = e.slice.column;
        throw Error(ErrorCode::kInvalidArgument,
                    "assemble: '" + e.slice.column + "' is " + DTypeName(t.dtype()) +
                        ShapeToString(t.shape()) + ", bucket= needs one number",
                    ctx);
      }
      const double v = ValueAt(t, 0);
      if (std::isnan(v)) {
        ErrorContext ctx = el.where.Context();
        ctx.key = e.slice.column;
        throw Error(ErrorCode::kInvalidArgument,
                    "assemble: '" + e.slice.column + "' is NaN, which no bucket holds", ctx);
      }
      o[e.slice.begin + BucketIndex(e.boundaries, v)] = 1.f;
      continue;
    }
    if (e.slice.kind == "onehot" || e.slice.kind == "index") {
      int64_t index = static_cast<int64_t>(e.vocabulary.size());  // oov
      if (t.dtype() == DType::kUInt8 && t.rank() == 1) {
        const auto it =
            e.vocabulary.find(std::string(static_cast<const char*>(t.raw_data()), t.byte_size()));
        if (it != e.vocabulary.end()) index = it->second;
      } else if (t.dtype() == DType::kInt64 && t.num_elements() == 1) {
        const int64_t v = t.data<int64_t>()[0];
        if (e.value_is_index) {
          if (v >= 0 && v < index) index = v;
        } else if (const auto it = e.vocabulary.find(std::to_string(v)); it != e.vocabulary.end()) {
          index = it->second;
        }
      } else {
        ErrorContext ctx = el.where.Context();
        ctx.key = e.slice.column;
        throw Error(ErrorCode::kInvalidArgument,
                    "assemble: '" + e.slice.column + "' is " + DTypeName(t.dtype()) +
                        ShapeToString(t.shape()) +
                        ", one-hot needs a string (uint8[n]) or an int64 scalar",
                    ctx);
      }
      if (e.slice.kind == "index") {
        o[e.slice.begin] = static_cast<float>(index);
      } else {
        o[e.slice.begin + index] = 1.f;
      }
      continue;
    }
    if (t.num_elements() != e.slice.width || t.dtype() == DType::kUInt8) {
      ErrorContext ctx = el.where.Context();
      ctx.key = e.slice.column;
      throw Error(ErrorCode::kInvalidArgument,
                  "assemble: '" + e.slice.column + "' is " + DTypeName(t.dtype()) +
                      ShapeToString(t.shape()) + ", the layout expects " +
                      std::to_string(e.slice.width) + " numbers",
                  ctx);
    }
    for (int64_t i = 0; i < e.slice.width; ++i) {
      const double v = ValueAt(t, i);
      if (e.slice.kind == "log1p" && !(v >= 0)) {
        ErrorContext ctx = el.where.Context();
        ctx.key = e.slice.column;
        throw Error(ErrorCode::kInvalidArgument,
                    "assemble: '" + e.slice.column + "' holds " + std::to_string(v) +
                        ", log1p takes counts >= 0",
                    ctx);
      }
      o[e.slice.begin + i] = static_cast<float>(e.slice.kind == "norm"    ? (v - e.mean) * e.scale
                                                : e.slice.kind == "log1p" ? std::log1p(v)
                                                                          : v);
    }
  }
  // The consumed features go; the assembled one takes their place.
  std::erase_if(el.features, [&](const auto& f) {
    return std::find(consumed_.begin(), consumed_.end(), f.first) != consumed_.end();
  });
  el.Set(feature_, std::move(out));
}

MapFn Assembler::AsMapFn(std::shared_ptr<const Assembler> self) const {
  return [self](Element& e, const MapContext&) { self->Apply(e); };
}

std::string Assembler::LayoutText() const {
  std::string t = feature_ + " float32[" + std::to_string(width_) + "] =";
  for (size_t i = 0; i < layout_.size(); ++i) {
    const AssembleSlice& s = layout_[i];
    t += i > 0 ? ", [" : " [";
    t += std::to_string(s.begin) + ":" + std::to_string(s.begin + s.width) + ") " + s.column + " " +
         s.kind;
    if (!s.detail.empty()) t += "(" + s.detail + ")";
  }
  if (id_space_ > 0) t += "; id space " + std::to_string(id_space_);
  return t;
}

std::shared_ptr<const Assembler> MakeAssembler(const AssembleConfig& config,
                                               const std::vector<std::string>& features,
                                               const std::string& section) {
  bool any = false;
  for (const auto& i : config.inputs) any = any || !Trim(i).empty();
  if (!any) return nullptr;
  return std::make_shared<Assembler>(config, features, section);
}

}  // namespace shardflow::pipeline
