// Table statistics (merge by chunks, JSON round trip) and the assemble step: numeric columns as
// they are and normalised, categorical strings and integers one-hot (statistics vocabulary,
// vocabulary file, converted indices), the layout, and its errors — through a CSV pipeline.
#include <gtest/gtest.h>

#include <cmath>

#include "io/pipeline/assemble.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/table_stats.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace assemble_test {

using testing::Drain;
using testing::ErrorText;
using testing::ExpectHas;
using testing::WriteFile;

io::TableStats Stats(const std::vector<double>& xs, const std::vector<std::string>& cities) {
  io::TableStats t;
  t.columns.push_back({.name = "a", .type = "float32"});
  t.columns.push_back({.name = "city", .type = "string", .categorical = true});
  for (double x : xs) t.columns[0].numeric.Add(x);
  for (const auto& c : cities) ++t.columns[1].values[c];
  t.rows = static_cast<int64_t>(xs.size());
  return t;
}

TEST(TableStats, ChunksMergeToTheWholeAndJsonRoundTripsExactly) {
  std::vector<double> xs;
  for (int i = 0; i < 1000; ++i) xs.push_back(std::sin(i) * 100 + i * 0.01);
  const io::TableStats whole = Stats(xs, {"b", "a", "b"});
  io::TableStats merged;
  for (size_t begin = 0; begin < xs.size(); begin += 137) {
    const size_t end = std::min(xs.size(), begin + 137);
    merged.Merge(
        Stats({xs.begin() + begin, xs.begin() + end},
              begin == 0 ? std::vector<std::string>{"b", "a", "b"} : std::vector<std::string>{}));
  }
  EXPECT_EQ(merged.rows, 1000);
  EXPECT_NEAR(merged.columns[0].numeric.mean, whole.columns[0].numeric.mean, 1e-9);
  EXPECT_NEAR(merged.columns[0].numeric.Std(), whole.columns[0].numeric.Std(), 1e-9);
  EXPECT_EQ(merged.columns[0].numeric.min, whole.columns[0].numeric.min);
  EXPECT_EQ(merged.columns[1].Vocabulary(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(merged.columns[1].values.at("b"), 2);
  const io::TableStats back = io::TableStatsFromJson(io::TableStatsToJson(merged), "mem");
  EXPECT_EQ(back.columns[0].numeric.mean, merged.columns[0].numeric.mean);  // bit for bit
  EXPECT_EQ(back.columns[0].numeric.m2, merged.columns[0].numeric.m2);
  EXPECT_EQ(back.columns[1].values, merged.columns[1].values);
  EXPECT_EQ(io::TableStatsToJson(back), io::TableStatsToJson(merged));
  ExpectHas(ErrorText([] { io::TableStatsFromJson("{\"rows\": 1}", "s.json"); }),
            "bad table statistics: expected an object with a 'columns' array");
}

class AssembleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile((dir_ / "t.csv").string(),
              "a,b,city,zone,label\n"
              "1,10,paris,3,0\n"
              "3,20,rome,7,1\n"
              "5,30,\"new, york\",9,1\n");
    io::TableStats stats = Stats({1, 3, 5}, {"paris", "rome", "tokyo"});
    io::WriteTableStats((dir_ / "t.stats.json").string(), stats);
    WriteFile((dir_ / "zones.txt").string(), "7\n3\n");
    spec_.data.format = "csv";
    spec_.data.files = {(dir_ / "t.csv").string()};
    spec_.data.shuffle_buffer = 0;
    spec_.data.batch_size = 3;
    spec_.csv.columns = {"a:float32", "b:int64", "city:string", "zone:int64", "label:int64"};
    spec_.assemble.stats = (dir_ / "t.stats.json").string();
  }
  shardflow::testing::ScratchDir dir_{"assemble"};
  InputSpec spec_;
};

TEST_F(AssembleTest, ConcatenatesNormalisesAndOneHotsInOrder) {
  spec_.assemble.inputs = {"a:norm", "b", "city:onehot",
                           "zone:onehot=" + (dir_ / "zones.txt").string()};
  const auto batches = Drain(BuildInputPipeline(spec_, 0, 1));
  ASSERT_EQ(batches.size(), 1u);
  const Tensor& x = batches[0].Get("input");
  // a:norm (1) + b (1) + city (3 + oov) + zone (2 + oov) = 9
  ASSERT_EQ(x.shape(), (Shape{3, 9}));
  EXPECT_FALSE(batches[0].Has("city"));
  EXPECT_TRUE(batches[0].Has("label"));
  const float sd = std::sqrt(8.f / 3.f);
  const float* r = x.data<float>();
  const std::vector<float> row0 = {-2 / sd, 10, 1, 0, 0, 0, 0, 1, 0};
  const std::vector<float> row2 = {2 / sd, 30, 0, 0, 0, 1, 0, 0, 1};  // "new, york": oov; 9: oov
  for (int i = 0; i < 9; ++i) {
    EXPECT_NEAR(r[i], row0[i], 1e-6) << i;
    EXPECT_NEAR(r[18 + i], row2[i], 1e-6) << i;
  }
  EXPECT_EQ(r[9 + 3], 1.f);  // rome
  EXPECT_EQ(r[9 + 6], 1.f);  // zone 7 is the first vocabulary entry
  const std::string layout = AssembledLayout(spec_);
  ExpectHas(layout, "input float32[9] = [0:1) a norm(mean=3 std=1.63299), [1:2) b raw");
  ExpectHas(layout, "[2:6) city onehot(3 + oov)");
  EXPECT_EQ(AssembledWidth(spec_), 9);
}

TEST_F(AssembleTest, ConvertedStringIndicesAreUsedAsTheyAre) {
  // shardflow-convert writes string columns as int64 vocabulary indices.
  WriteFile((dir_ / "t.csv").string(), "city,label\n2,0\n0,1\n9,1\n");
  spec_.csv.columns = {"city:int64", "label:int64"};
  spec_.assemble.inputs = {"city:onehot"};
  const auto batches = Drain(BuildInputPipeline(spec_, 0, 1));
  const float* r = batches[0].Get("input").data<float>();
  EXPECT_EQ(r[2], 1.f);
  EXPECT_EQ(r[4 + 0], 1.f);
  EXPECT_EQ(r[8 + 3], 1.f);  // out of range: oov
}

TEST_F(AssembleTest, IndexSlotsHoldVocabularyIndicesForAnEmbedding) {
  spec_.assemble.inputs = {"b", "city:index"};
  const auto batches = Drain(BuildInputPipeline(spec_, 0, 1));
  const Tensor& x = batches[0].Get("input");
  ASSERT_EQ(x.shape(), (Shape{3, 2}));
  EXPECT_EQ(x.data<float>()[1], 0.f);  // paris
  EXPECT_EQ(x.data<float>()[3], 1.f);  // rome
  EXPECT_EQ(x.data<float>()[5], 3.f);  // "new, york": out of vocabulary = 3
  ExpectHas(AssembledLayout(spec_), "[1:2) city index(3 + oov)");
}

TEST_F(AssembleTest, ErrorsNameTheKeyOrTheRecord) {
  spec_.assemble.inputs = {"a:norm"};
  spec_.assemble.stats.clear();
  ExpectHas(ErrorText([&] { BuildInputPipeline(spec_, 0, 1); }), "data.assemble_stats");
  spec_.assemble.inputs = {"a:cube"};
  ExpectHas(ErrorText([&] { BuildInputPipeline(spec_, 0, 1); }), "unknown kind 'cube'");
  spec_.assemble.stats = (dir_ / "t.stats.json").string();
  spec_.assemble.inputs = {"b:norm"};
  ExpectHas(ErrorText([&] { BuildInputPipeline(spec_, 0, 1); }), "no numeric statistics for 'b'");
  spec_.assemble.inputs = {"nothere"};
  ExpectHas(ErrorText([&] { Drain(BuildInputPipeline(spec_, 0, 1)); }), "nothere");
  spec_.assemble.inputs = {"city"};
  ExpectHas(ErrorText([&] { Drain(BuildInputPipeline(spec_, 0, 1)); }),
            "assemble: 'city' is uint8[5], the layout expects 1 numbers");
}

}  // namespace assemble_test
}  // namespace shardflow::pipeline
