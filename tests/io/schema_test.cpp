#include "io/schema.hpp"

#include <gtest/gtest.h>

namespace shardflow::io {
namespace schema_test {

SerializedExample At(const std::string& data, int64_t record) {
  return {data, {"data.tfrecord", 100, record}};
}

TEST(Schema, FixedVarLenDefaultsAndConversions) {
  Schema schema;
  schema.features = {FeatureSpec::Fixed("img", FeatureKind::kBytes, DType::kUInt8, {2, 2, 1}),
                     FeatureSpec::Fixed("label", FeatureKind::kInt64, DType::kInt32, {}),
                     FeatureSpec::Fixed("w", FeatureKind::kFloat, DType::kFloat64, {2}, {0.5}),
                     FeatureSpec::VarLen("tags", FeatureKind::kInt64, DType::kInt64),
                     FeatureSpec::Fixed("x", FeatureKind::kInt64, DType::kFloat32, {3})};
  const std::string a = ExampleBuilder()
                            .AddBytes("img", {"\x01\x02", "\x03\x04"})
                            .AddInt64("label", {3})
                            .AddFloat("w", {1.0f, 2.0f})
                            .AddInt64("tags", {5, 6, 7})
                            .AddInt64("x", {1, 2, 3})
                            .Serialize();
  const std::string b = ExampleBuilder()
                            .AddBytes("img", {std::string("\xff\0\x10\x20", 4)})
                            .AddInt64("label", {-4})
                            .AddInt64("x", {-1, 0, 1})
                            .Serialize();
  ExampleBatchParser parser(schema);
  const std::vector<SerializedExample> examples = {At(a, 0), At(b, 1)};
  ParsedBatch batch = parser.ParseBatch(examples);
  ASSERT_EQ(batch.size, 2);
  EXPECT_EQ(batch.Get("img").shape(), (Shape{2, 2, 2, 1}));
  const uint8_t* img = batch.Get("img").data<uint8_t>();
  EXPECT_EQ(img[0], 1);
  EXPECT_EQ(img[3], 4);
  EXPECT_EQ(img[4], 0xff);
  EXPECT_EQ(img[7], 0x20);
  EXPECT_EQ(batch.Get("label").data<int32_t>()[1], -4);
  const double* w = batch.Get("w").data<double>();
  EXPECT_EQ(w[0], 1.0);
  EXPECT_EQ(w[2], 0.5);  // default broadcast
  EXPECT_EQ(w[3], 0.5);
  EXPECT_EQ(batch.values[3].shape(), (Shape{3}));
  EXPECT_EQ(batch.row_lengths[3].data<int64_t>()[0], 3);
  EXPECT_EQ(batch.row_lengths[3].data<int64_t>()[1], 0);
  EXPECT_EQ(batch.Get("x").data<float>()[3], -1.0f);
  // Zero examples.
  ParsedBatch empty = parser.ParseBatch({});
  EXPECT_EQ(empty.Get("img").shape(), (Shape{0, 2, 2, 1}));
}

void ExpectError(ExampleBatchParser& parser, const std::string& data, ErrorCode code,
                 const std::string& message, const std::string& key) {
  const std::vector<SerializedExample> ex = {At(data, 7)};
  try {
    parser.ParseBatch(ex);
    FAIL() << "no error for " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code);
    EXPECT_EQ(e.status().message(), message);
    EXPECT_EQ(e.context().key, key);
    EXPECT_EQ(e.context().file, "data.tfrecord");
    EXPECT_EQ(e.context().record, 7);
  }
}

TEST(Schema, ErrorsNameFeatureRecordAndFile) {
  Schema schema;
  schema.features = {
      FeatureSpec::Fixed("image_raw", FeatureKind::kBytes, DType::kUInt8, {28, 28, 1}),
      FeatureSpec::Fixed("label", FeatureKind::kInt64, DType::kInt32, {})};
  ExampleBatchParser parser(schema);
  const std::string img(784, 'x');
  ExpectError(parser, ExampleBuilder().AddBytes("image_raw", {img}).Serialize(),
              ErrorCode::kNotFound, "required feature 'label' is missing", "label");
  ExpectError(parser,
              ExampleBuilder().AddBytes("image_raw", {img}).AddFloat("label", {1.0f}).Serialize(),
              ErrorCode::kInvalidArgument,
              "feature 'label' is a float list, the schema expects int64", "label");
  ExpectError(parser,
              ExampleBuilder().AddBytes("image_raw", {"short"}).AddInt64("label", {1}).Serialize(),
              ErrorCode::kInvalidArgument,
              "feature 'image_raw' has 5 bytes, shape [28,28,1] needs 784", "image_raw");
  ExpectError(
      parser, ExampleBuilder().AddBytes("image_raw", {img}).AddInt64("label", {1, 2}).Serialize(),
      ErrorCode::kInvalidArgument, "feature 'label' has 2 values, shape [] needs 1", "label");
  ExpectError(parser,
              ExampleBuilder()
                  .AddBytes("image_raw", {img})
                  .AddInt64("label", {int64_t{1} << 40})
                  .Serialize(),
              ErrorCode::kInvalidArgument, "value 1099511627776 does not fit int32", "label");
  try {
    const std::string bad = "\x0f";
    const std::vector<SerializedExample> ex = {At(bad, 3)};
    parser.ParseBatch(ex);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_EQ(e.context().record, 3);
    EXPECT_EQ(e.context().offset, 100u);
  }
}

TEST(Schema, InvalidSchemasAreRejected) {
  auto make = [](std::vector<FeatureSpec> f) { return ExampleBatchParser(Schema{std::move(f)}); };
  EXPECT_THROW(make({FeatureSpec::Fixed("a", FeatureKind::kBytes, DType::kFloat32, {})}), Error);
  EXPECT_THROW(make({FeatureSpec::Fixed("a", FeatureKind::kFloat, DType::kInt64, {})}), Error);
  EXPECT_THROW(make({FeatureSpec::Fixed("a", FeatureKind::kFloat, DType::kFloat32, {3}, {1, 2})}),
               Error);
  EXPECT_THROW(make({FeatureSpec::Fixed("a", FeatureKind::kFloat, DType::kFloat32, {}),
                     FeatureSpec::Fixed("a", FeatureKind::kFloat, DType::kFloat32, {})}),
               Error);
}

}  // namespace schema_test
}  // namespace shardflow::io
