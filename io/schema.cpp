#include "io/schema.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

namespace shardflow::io {
namespace {

// What a feature holds in the schema's unit: bytes for a bytes list, else values.
int64_t ValueCount(const FeatureSpec& spec, const FeatureView& f) {
  return spec.kind == FeatureKind::kBytes ? static_cast<int64_t>(f.total_bytes) : f.num_values;
}

ErrorContext Where(const SerializedExample& ex, const std::string& feature) {
  ErrorContext ctx;
  ctx.file = std::string(ex.where.file);
  ctx.offset = ex.where.data_offset;
  if (ex.where.record >= 0) ctx.record = ex.where.record;
  ctx.key = feature;
  return ctx;
}

bool Convertible(FeatureKind kind, DType dtype) {
  switch (kind) {
    case FeatureKind::kInt64:
      return dtype == DType::kInt64 || dtype == DType::kInt32 || dtype == DType::kFloat32 ||
             dtype == DType::kFloat64;
    case FeatureKind::kFloat:
      return dtype == DType::kFloat32 || dtype == DType::kFloat64;
    case FeatureKind::kBytes:
      return dtype == DType::kUInt8;
    case FeatureKind::kNone:
      return false;
  }
  return false;
}

// Writes n values of `src` (int64 or float) converted to dtype at dst.
template <typename Src>
void Convert(const Src* src, int64_t n, DType dtype, void* dst, const SerializedExample& ex,
             const std::string& name) {
  switch (dtype) {
    case DType::kInt64:
      for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(dst)[i] = static_cast<int64_t>(src[i]);
      break;
    case DType::kInt32:
      for (int64_t i = 0; i < n; ++i) {
        const int64_t v = static_cast<int64_t>(src[i]);
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
          throw Error(ErrorCode::kInvalidArgument,
                      "value " + std::to_string(v) + " does not fit int32", Where(ex, name));
        }
        static_cast<int32_t*>(dst)[i] = static_cast<int32_t>(v);
      }
      break;
    case DType::kFloat32:
      for (int64_t i = 0; i < n; ++i) static_cast<float*>(dst)[i] = static_cast<float>(src[i]);
      break;
    case DType::kFloat64:
      for (int64_t i = 0; i < n; ++i) static_cast<double*>(dst)[i] = static_cast<double>(src[i]);
      break;
    case DType::kUInt8:
      break;  // bytes only; excluded by Convertible
  }
}

template <typename T>
void FillDefault(const std::vector<double>& def, int64_t n, T* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(def.size() == 1 ? def[0] : def[i]);
}

}  // namespace

FeatureSpec FeatureSpec::Fixed(std::string name, FeatureKind kind, DType dtype, Shape shape,
                               std::vector<double> default_value) {
  FeatureSpec s;
  s.name = std::move(name);
  s.kind = kind;
  s.dtype = dtype;
  s.shape = std::move(shape);
  s.default_value = std::move(default_value);
  return s;
}

FeatureSpec FeatureSpec::VarLen(std::string name, FeatureKind kind, DType dtype) {
  FeatureSpec s;
  s.name = std::move(name);
  s.kind = kind;
  s.dtype = dtype;
  s.var_len = true;
  return s;
}

bool ShapeMatches(const Shape& shape, const Shape& spec) {
  if (shape.size() != spec.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (spec[i] != kAnySize && spec[i] != shape[i]) return false;
  }
  return true;
}

bool HasAnySize(const Shape& spec) {
  return std::find(spec.begin(), spec.end(), kAnySize) != spec.end();
}

std::string SpecShapeText(const Shape& spec) {
  if (spec.empty()) return "scalar";
  std::string text;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (i > 0) text += 'x';
    text += spec[i] == kAnySize ? std::string("*") : std::to_string(spec[i]);
  }
  return text;
}

const Tensor& ParsedBatch::Get(std::string_view name) const {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return values[i];
  }
  throw Error(ErrorCode::kNotFound, "no feature '" + std::string(name) + "' in the batch",
              {.key = std::string(name)});
}

ExampleBatchParser::ExampleBatchParser(Schema schema) : schema_(std::move(schema)) {
  std::set<std::string> names;
  for (const FeatureSpec& f : schema_.features) {
    const ErrorContext ctx{.key = f.name};
    if (f.name.empty()) throw Error(ErrorCode::kInvalidArgument, "feature with an empty name");
    if (!names.insert(f.name).second) {
      throw Error(ErrorCode::kInvalidArgument, "feature listed twice in the schema", ctx);
    }
    if (!Convertible(f.kind, f.dtype)) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string("a ") + FeatureKindName(f.kind) + " feature cannot become " +
                      DTypeName(f.dtype),
                  ctx);
    }
    if (!f.var_len) {
      for (int64_t d : f.shape) {
        if (d < 0) throw Error(ErrorCode::kInvalidArgument, "negative dimension in shape", ctx);
      }
      const auto n = static_cast<size_t>(NumElements(f.shape));
      if (!f.default_value.empty() && f.default_value.size() != 1 && f.default_value.size() != n) {
        throw Error(ErrorCode::kInvalidArgument,
                    "default has " + std::to_string(f.default_value.size()) +
                        " values, the shape " + ShapeToString(f.shape) + " needs 1 or " +
                        std::to_string(n),
                    ctx);
      }
    } else if (!f.default_value.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "a var_len feature has no default", ctx);
    }
  }
  var_values_.resize(schema_.features.size());
  var_rows_.resize(schema_.features.size());
}

void ExampleBatchParser::Begin(int64_t n) {
  batch_ = ParsedBatch();
  batch_.size = n;
  for (size_t i = 0; i < schema_.features.size(); ++i) {
    const FeatureSpec& f = schema_.features[i];
    batch_.names.push_back(f.name);
    if (f.var_len) {
      batch_.values.emplace_back();
      batch_.row_lengths.emplace_back();
      var_values_[i].clear();
      var_rows_[i].assign(static_cast<size_t>(n), 0);
    } else {
      Shape shape = {n};
      shape.insert(shape.end(), f.shape.begin(), f.shape.end());
      batch_.values.emplace_back(f.dtype, shape);
      batch_.row_lengths.emplace_back();
    }
  }
}

void ExampleBatchParser::FillFixed(size_t i, const FeatureView* f, const SerializedExample& ex,
                                   int64_t row) {
  const FeatureSpec& spec = schema_.features[i];
  const int64_t n = NumElements(spec.shape);
  Tensor& out = batch_.values[i];
  void* dst =
      static_cast<char*>(out.raw_data()) + static_cast<size_t>(row * n) * DTypeSize(spec.dtype);
  if (f == nullptr) {
    if (spec.default_value.empty()) {
      throw Error(ErrorCode::kNotFound, "required feature '" + spec.name + "' is missing",
                  Where(ex, spec.name));
    }
    switch (spec.dtype) {
      case DType::kFloat32:
        FillDefault(spec.default_value, n, static_cast<float*>(dst));
        break;
      case DType::kFloat64:
        FillDefault(spec.default_value, n, static_cast<double*>(dst));
        break;
      case DType::kUInt8:
        FillDefault(spec.default_value, n, static_cast<uint8_t*>(dst));
        break;
      case DType::kInt32:
        FillDefault(spec.default_value, n, static_cast<int32_t*>(dst));
        break;
      case DType::kInt64:
        FillDefault(spec.default_value, n, static_cast<int64_t*>(dst));
        break;
    }
    return;
  }
  const int64_t have = ValueCount(spec, *f);
  if (f->kind == spec.kind && have != n) {
    throw Error(ErrorCode::kInvalidArgument,
                "feature '" + spec.name + "' has " + std::to_string(have) +
                    (spec.kind == FeatureKind::kBytes ? " bytes" : " values") + ", shape " +
                    ShapeToString(spec.shape) + " needs " + std::to_string(n),
                Where(ex, spec.name));
  }
  CopyValues(spec, *f, n, dst, ex);
}

void ExampleBatchParser::CopyValues(const FeatureSpec& spec, const FeatureView& f, int64_t n,
                                    void* dst, const SerializedExample& ex) {
  if (f.kind != spec.kind) {
    throw Error(ErrorCode::kInvalidArgument,
                "feature '" + spec.name + "' is a " + FeatureKindName(f.kind) +
                    " list, the schema expects " + FeatureKindName(spec.kind),
                Where(ex, spec.name));
  }
  if (spec.kind == FeatureKind::kBytes) {
    f.CopyBytes(static_cast<uint8_t*>(dst));
  } else if (spec.kind == FeatureKind::kInt64) {
    if (spec.dtype == DType::kInt64) {
      f.CopyInt64s(static_cast<int64_t*>(dst));
    } else {
      scratch_ints_.resize(static_cast<size_t>(n));
      f.CopyInt64s(scratch_ints_.data());
      Convert(scratch_ints_.data(), n, spec.dtype, dst, ex, spec.name);
    }
  } else {
    if (spec.dtype == DType::kFloat32) {
      f.CopyFloats(static_cast<float*>(dst));
    } else {
      scratch_floats_.resize(static_cast<size_t>(n));
      f.CopyFloats(scratch_floats_.data());
      Convert(scratch_floats_.data(), n, spec.dtype, dst, ex, spec.name);
    }
  }
}

void ExampleBatchParser::AppendVarLen(size_t i, const FeatureView* f, const SerializedExample& ex,
                                      int64_t row) {
  const FeatureSpec& spec = schema_.features[i];
  if (f == nullptr || f->kind == FeatureKind::kNone) {
    var_rows_[i][static_cast<size_t>(row)] = 0;
    return;
  }
  const int64_t n = f->kind == spec.kind ? ValueCount(spec, *f) : 0;
  std::vector<uint8_t>& staging = var_values_[i];
  const size_t old = staging.size();
  staging.resize(old + static_cast<size_t>(n) * DTypeSize(spec.dtype));
  void* dst = staging.data() + old;
  CopyValues(spec, *f, n, dst, ex);
  var_rows_[i][static_cast<size_t>(row)] = n;
}

void ExampleBatchParser::ParseInto(const SerializedExample& example, int64_t row) {
  if (row < 0 || row >= batch_.size) {
    throw Error(ErrorCode::kInternal, "row " + std::to_string(row) + " outside the batch of " +
                                          std::to_string(batch_.size));
  }
  ThrowIfError(ParseExample(example.data, &view_, &example.where));
  for (size_t i = 0; i < schema_.features.size(); ++i) {
    const FeatureView* f = view_.Find(schema_.features[i].name);
    if (schema_.features[i].var_len) {
      AppendVarLen(i, f, example, row);
    } else {
      FillFixed(i, f, example, row);
    }
  }
}

ParsedBatch ExampleBatchParser::Finish() {
  for (size_t i = 0; i < schema_.features.size(); ++i) {
    const FeatureSpec& spec = schema_.features[i];
    if (!spec.var_len) continue;
    const int64_t total = static_cast<int64_t>(var_values_[i].size() / DTypeSize(spec.dtype));
    Tensor values(spec.dtype, {total});
    if (total > 0) std::memcpy(values.raw_data(), var_values_[i].data(), var_values_[i].size());
    Tensor rows(DType::kInt64, {batch_.size});
    if (batch_.size > 0) {
      std::memcpy(rows.raw_data(), var_rows_[i].data(), var_rows_[i].size() * sizeof(int64_t));
    }
    batch_.values[i] = std::move(values);
    batch_.row_lengths[i] = std::move(rows);
  }
  return std::move(batch_);
}

ParsedBatch ExampleBatchParser::ParseBatch(std::span<const SerializedExample> examples) {
  Begin(static_cast<int64_t>(examples.size()));
  for (size_t r = 0; r < examples.size(); ++r) ParseInto(examples[r], static_cast<int64_t>(r));
  return Finish();
}

}  // namespace shardflow::io
