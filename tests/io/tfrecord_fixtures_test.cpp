// Fixtures written by TensorFlow, the Node.js `tfrecord` package and Python's gzip/zlib read with
// exactly the counts and sums of their manifests.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "io/example.hpp"
#include "io/schema.hpp"
#include "io/tfrecord_reader.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::io {
namespace tfrecord_fixtures_test {

std::string Fixture(const std::string& name) {
  return (testing::FixturesDir() / "tfrecord" / name).string();
}

nlohmann::json LoadJson(const std::string& name) {
  std::ifstream in(Fixture(name));
  return nlohmann::json::parse(in);
}

struct ShardSums {
  int64_t records = 0, label_sum = 0, pixel_sum = 0, id_sum = 0;
};

ShardSums ReadFmnist(const std::string& path) {
  Schema schema;
  schema.features = {
      FeatureSpec::Fixed("image_raw", FeatureKind::kBytes, DType::kUInt8, {28, 28, 1}),
      FeatureSpec::Fixed("label", FeatureKind::kInt64, DType::kInt64, {}),
      FeatureSpec::Fixed("id", FeatureKind::kInt64, DType::kInt64, {}),
      FeatureSpec::Fixed("shape", FeatureKind::kInt64, DType::kInt32, {3})};
  ExampleBatchParser parser(schema);
  TFRecordReader reader(path);
  std::vector<std::string> storage;
  std::vector<SerializedExample> examples;
  TFRecordReader::Record rec;
  while (reader.Next(&rec)) storage.emplace_back(rec.data);
  for (size_t i = 0; i < storage.size(); ++i) {
    examples.push_back({storage[i], {path, 0, static_cast<int64_t>(i)}});
  }
  ParsedBatch batch = parser.ParseBatch(examples);
  ShardSums s;
  s.records = batch.size;
  const Tensor& images = batch.Get("image_raw");
  EXPECT_EQ(images.shape(), (Shape{batch.size, 28, 28, 1}));
  for (int64_t i = 0; i < images.num_elements(); ++i) s.pixel_sum += images.data<uint8_t>()[i];
  for (int64_t i = 0; i < batch.size; ++i) {
    s.label_sum += batch.Get("label").data<int64_t>()[i];
    s.id_sum += batch.Get("id").data<int64_t>()[i];
    const int32_t* shape = batch.Get("shape").data<int32_t>() + 3 * i;
    EXPECT_EQ(shape[0] * 100 + shape[1] * 10 + shape[2], 2800 + 280 + 1);
  }
  return s;
}

TEST(TFRecordFixtures, FashionMnistShardsMatchTheManifest) {
  const auto manifest = LoadJson("fmnist-test.manifest.json");
  int64_t total = 0;
  for (const auto& file : manifest["files"]) {
    std::vector<std::string> paths = {Fixture(file["name"])};
    if (file["name"] == "fmnist-test-00000-of-00002.tfrecord") {
      paths.push_back(paths[0] + ".gz");
      paths.push_back(paths[0] + ".zlib");
    }
    for (const std::string& path : paths) {
      SCOPED_TRACE(path);
      const ShardSums s = ReadFmnist(path);
      EXPECT_EQ(s.records, file["records"].get<int64_t>());
      EXPECT_EQ(s.label_sum, file["label_sum"].get<int64_t>());
      EXPECT_EQ(s.pixel_sum, file["pixel_sum"].get<int64_t>());
      const int64_t first = file["first_id"].get<int64_t>();
      EXPECT_EQ(s.id_sum, s.records * first + s.records * (s.records - 1) / 2);
    }
    total += file["records"].get<int64_t>();
  }
  EXPECT_EQ(total, manifest["count"].get<int64_t>());
}

TEST(TFRecordFixtures, TensorFlowWrittenExample) {
  const auto expected = LoadJson("tf-written.expected.json");
  TFRecordReader reader(Fixture("tf-written.tfrecord"));
  TFRecordReader::Record rec;
  int64_t n = 0;
  while (reader.Next(&rec)) {
    ExampleView view;
    ThrowIfError(ParseExample(rec.data, &view));
    const auto& want = expected["examples"][static_cast<size_t>(n)];
    ASSERT_EQ(view.features().size(), want.size());
    const FeatureView* answer = view.Find("answer");
    ASSERT_NE(answer, nullptr);
    int64_t v = 0;
    ASSERT_EQ(answer->num_values, 1);
    answer->CopyInt64s(&v);
    EXPECT_EQ(v, want["answer"]["int64"][0].get<int64_t>());
    const FeatureView* pi = view.Find("pi");
    ASSERT_NE(pi, nullptr);
    float f = 0;
    pi->CopyFloats(&f);
    EXPECT_EQ(f, want["pi"]["float"][0].get<float>());
    const FeatureView* name = view.Find("name");
    ASSERT_NE(name, nullptr);
    std::vector<std::string> values;
    name->ForEachBytes([&](std::string_view b) { values.emplace_back(b); });
    EXPECT_EQ(values, std::vector<std::string>{want["name"]["bytes"][0].get<std::string>()});
    ++n;
  }
  EXPECT_EQ(n, expected["records"].get<int64_t>());
}

TEST(TFRecordFixtures, MixedFeaturesMatchExpectedValues) {
  const auto expected = LoadJson("mixed-features.expected.json");
  Schema schema;
  schema.features = {FeatureSpec::VarLen("floats", FeatureKind::kFloat, DType::kFloat32),
                     FeatureSpec::VarLen("ints", FeatureKind::kInt64, DType::kInt64),
                     FeatureSpec::Fixed("index", FeatureKind::kInt64, DType::kInt64, {})};
  ExampleBatchParser parser(schema);
  TFRecordReader reader(Fixture("mixed-features.tfrecord"));
  TFRecordReader::Record rec;
  std::vector<std::string> storage;
  while (reader.Next(&rec)) storage.emplace_back(rec.data);
  ASSERT_EQ(storage.size(), expected.size());
  std::vector<SerializedExample> examples;
  for (const auto& s : storage) examples.push_back({s, {}});
  ParsedBatch batch = parser.ParseBatch(examples);
  const float* floats = batch.values[0].data<float>();
  const int64_t* ints = batch.values[1].data<int64_t>();
  for (size_t i = 0; i < storage.size(); ++i) {
    const auto& want = expected[i];
    EXPECT_EQ(batch.values[2].data<int64_t>()[i], want["index"].get<int64_t>());
    ASSERT_EQ(batch.row_lengths[0].data<int64_t>()[i], static_cast<int64_t>(want["floats"].size()));
    for (const auto& v : want["floats"]) EXPECT_EQ(*floats++, v.get<float>());
    ASSERT_EQ(batch.row_lengths[1].data<int64_t>()[i], static_cast<int64_t>(want["ints"].size()));
    for (const auto& v : want["ints"]) EXPECT_EQ(*ints++, v.get<int64_t>());
    ExampleView view;
    ThrowIfError(ParseExample(storage[i], &view));
    std::vector<std::string> strings;
    view.Find("strings")->ForEachBytes([&](std::string_view b) { strings.emplace_back(b); });
    EXPECT_EQ(strings, want["strings"].get<std::vector<std::string>>());
  }
}

}  // namespace tfrecord_fixtures_test
}  // namespace shardflow::io
