// Schema: how the features of tf.train.Examples become typed Tensors (core/tensor.hpp), like
// tf.io.parse_example with FixedLenFeature / VarLenFeature.
//
//   Schema schema;
//   schema.features = {FeatureSpec::Fixed("image_raw", FeatureKind::kBytes, DType::kUInt8, {28, 28,
//   1}),
//                      FeatureSpec::Fixed("label", FeatureKind::kInt64, DType::kInt64, {})};
//   ExampleBatchParser parser(schema);
//   ParsedBatch batch = parser.ParseBatch(records);   // batch.values[0]: uint8 [N,28,28,1]
//
// Fixed-length: each Example must hold exactly NumElements(shape) values (bytes features: that
// many bytes in total over the list's values, e.g. one 784-byte `image_raw`); a missing feature
// takes the default (one value broadcast, or NumElements values) or is an error if none.
// Variable-length: values of all rows concatenated into a 1-D tensor plus int64 row_lengths [N].
// Conversions: int64 -> int64, int32 (range-checked), float32, float64; float -> float32,
// float64; bytes -> uint8.
// Errors (thrown Error): kNotFound for a missing required feature, kInvalidArgument for a wrong
// kind or length or an out-of-range value, kDataLoss for a malformed Example; each names the
// feature (key), the file, the record index and the byte offset.
// Thread-safety: a parser is used by one thread at a time; separate parsers share nothing.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/tensor.hpp"
#include "io/example.hpp"

namespace shardflow::io {

struct FeatureSpec {
  std::string name;
  FeatureKind kind = FeatureKind::kFloat;  // the list kind expected in the Example
  DType dtype = DType::kFloat32;           // the output element type
  Shape shape;                             // per-example shape; unused for var_len
  bool var_len = false;
  std::vector<double> default_value;  // empty: required (fixed-length only)

  static FeatureSpec Fixed(std::string name, FeatureKind kind, DType dtype, Shape shape,
                           std::vector<double> default_value = {});
  static FeatureSpec VarLen(std::string name, FeatureKind kind, DType dtype);
};

struct Schema {
  std::vector<FeatureSpec> features;
};

// A dimension of any size: "*" in a feature spec's text, an image's height or width
// (variable-size images, e.g. ImageNet's JPEGs, cropped or resized to one size before batching).
inline constexpr int64_t kAnySize = -1;
// True when `shape` has the spec's rank and equals it in every dimension not kAnySize.
bool ShapeMatches(const Shape& shape, const Shape& spec);
// True when some dimension is kAnySize.
bool HasAnySize(const Shape& spec);
// The spec's shape as its text writes it: "*x*x3", "28x28x1", "scalar".
std::string SpecShapeText(const Shape& spec);

// One serialized Example and where it came from.
struct SerializedExample {
  std::string_view data;
  RecordLocation where;
};

// Parsed features of N Examples, in schema order.
struct ParsedBatch {
  int64_t size = 0;
  std::vector<std::string> names;
  std::vector<Tensor> values;       // fixed: [N, shape...]; var_len: [total values]
  std::vector<Tensor> row_lengths;  // var_len: int64 [N]; fixed: empty
  // Throws Error(kNotFound) for an unknown name.
  const Tensor& Get(std::string_view name) const;
};

class ExampleBatchParser {
 public:
  // Validates the schema (names unique, kind/dtype convertible, default sizes); throws
  // Error(kInvalidArgument) naming the feature.
  explicit ExampleBatchParser(Schema schema);

  const Schema& schema() const { return schema_; }

  // Parses all examples straight into one batch tensor per feature.
  ParsedBatch ParseBatch(std::span<const SerializedExample> examples);

  // Fused map+batch: Begin(n) allocates the batch; ParseInto(example, row) decodes one Example
  // into row `row` (rows may be filled in any order, var_len rows must come in order);
  // Finish() hands the batch over.
  void Begin(int64_t n);
  void ParseInto(const SerializedExample& example, int64_t row);
  ParsedBatch Finish();

 private:
  void FillFixed(size_t i, const FeatureView* f, const SerializedExample& ex, int64_t row);
  void AppendVarLen(size_t i, const FeatureView* f, const SerializedExample& ex, int64_t row);
  // Copies f's n values (bytes, or int64/float values converted to spec.dtype) to dst; throws
  // when f holds another kind of list than the schema's.
  void CopyValues(const FeatureSpec& spec, const FeatureView& f, int64_t n, void* dst,
                  const SerializedExample& ex);

  Schema schema_;
  ExampleView view_;
  ParsedBatch batch_;
  std::vector<std::vector<uint8_t>> var_values_;  // staging, per feature, raw output bytes
  std::vector<std::vector<int64_t>> var_rows_;
  std::vector<int64_t> scratch_ints_;
  std::vector<float> scratch_floats_;
};

}  // namespace shardflow::io
