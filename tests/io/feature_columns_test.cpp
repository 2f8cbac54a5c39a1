// Feature columns of data.assemble (io/pipeline/feature_columns.hpp) through a CSV pipeline:
// hashed, identity and crossed categorical slots in one shared id space, delimited lists of ids
// (padding, truncation, the too-long error), bucketized numbers one-hot, log1p counts, missing
// values taking no id, int64 lists (also of any length from JSON lines), the layout, and the
// errors that name the key or the record.
#include <gtest/gtest.h>

#include "core/hash.hpp"
#include "io/pipeline/assemble.hpp"
#include "io/pipeline/feature_columns.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace feature_columns_test {

using testing::Drain;
using testing::ErrorText;
using testing::ExpectHas;
using testing::WriteFile;

float Bucket(std::string_view text, int64_t buckets, int64_t offset = 0) {
  return static_cast<float>(offset + static_cast<int64_t>(Fnv1a64(text) % buckets));
}

class FeatureColumnsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile((dir_ / "t.csv").string(),
              "x,shop,user,tags,label\n"
              "-3,a1,7,5|9|5,0\n"
              "10,,3,,1\n"
              "250,b2,-1,1|2|3|4,1\n");
    spec_.data.format = "csv";
    spec_.data.files = {(dir_ / "t.csv").string()};
    spec_.data.shuffle_buffer = 0;
    spec_.data.batch_size = 3;
    spec_.csv.columns = {"x:float32", "shop:string=", "user:int64", "tags:string=", "label:int64"};
  }
  shardflow::testing::ScratchDir dir_{"feature_columns"};
  InputSpec spec_;
};

TEST_F(FeatureColumnsTest, IdSlotsShareOneSpaceInAssembleOrder) {
  spec_.assemble.inputs = {"x:bucket=0|100", "shop:hash=50", "user:id=10", "shop*user:hash=20",
                           "tags:ids=4:hash=1000"};
  const auto batches = Drain(BuildInputPipeline(spec_, 0, 1));
  ASSERT_EQ(batches.size(), 1u);
  const Tensor& x = batches[0].Get("input");
  ASSERT_EQ(x.shape(), (Shape{3, 3 + 1 + 1 + 1 + 4}));
  EXPECT_FALSE(batches[0].Has("shop"));
  EXPECT_FALSE(batches[0].Has("tags"));
  EXPECT_TRUE(batches[0].Has("label"));
  const float* r = x.data<float>();
  // Row 0: x = -3 in (-inf, 0); shop a1 hashed in [0, 50); user 7 at 50 + 7; the cross at 60 +
  // bucket of "a1\x1f7"; tags 5, 9, 5 at 80 + their buckets, then -1.
  const std::vector<float> row0 = {1,
                                   0,
                                   0,
                                   Bucket("a1", 50),
                                   57,
                                   Bucket("a1\x1f"
                                          "7",
                                          20, 60),
                                   Bucket("5", 1000, 80),
                                   Bucket("9", 1000, 80),
                                   Bucket("5", 1000, 80),
                                   -1};
  for (size_t i = 0; i < row0.size(); ++i) EXPECT_EQ(r[i], row0[i]) << i;
  // Row 1: x = 10 in [0, 100); shop missing: no id, and no cross; tags empty: all -1.
  const std::vector<float> row1 = {0, 1, 0, -1, 53, -1, -1, -1, -1, -1};
  for (size_t i = 0; i < row1.size(); ++i) EXPECT_EQ(r[10 + i], row1[i]) << i;
  // Row 2: x = 250 in [100, inf); user -1 is missing (identity and cross); four tags.
  EXPECT_EQ(r[20 + 2], 1.f);
  EXPECT_EQ(r[20 + 4], -1.f);
  EXPECT_EQ(r[20 + 5], -1.f);
  EXPECT_EQ(r[20 + 9], Bucket("4", 1000, 80));
  spec_.data.files = {(dir_ / "t.csv").string()};
  const std::string layout = AssembledLayout(spec_);
  ExpectHas(layout, "[0:3) x bucket(3 ranges), [3:4) shop hash(ids [0, 50) hash)");
  ExpectHas(layout, "[4:5) user identity(ids [50, 60) identity)");
  ExpectHas(layout, "[5:6) shop*user cross(ids [60, 80) hash)");
  ExpectHas(layout, "[6:10) tags list(ids [80, 1080) hash, lists of 4); id space 1080");
}

// Variable-length int64 lists from JSON lines (json_schema tags:int64[*]) fill ids= slots: an
// empty list takes none, a longer one is truncated when the entry says so.
TEST_F(FeatureColumnsTest, JsonLinesListsOfAnyLengthFillIdSlots) {
  WriteFile((dir_ / "t.jsonl").string(),
            "{\"tags\": [4, 9], \"label\": 0}\n{\"tags\": [], \"label\": 1}\n"
            "{\"tags\": [1, 2, 3, 4], \"label\": 1}\n");
  spec_.data.format = "jsonl";
  spec_.data.files = {(dir_ / "t.jsonl").string()};
  spec_.format.json_schema = "tags:int64[*], label:int64";
  spec_.assemble.inputs = {"tags:ids=3:id=10:truncate"};
  const auto batches = Drain(BuildInputPipeline(spec_, 0, 1));
  ASSERT_EQ(batches.size(), 1u);
  const Tensor& x = batches[0].Get("input");
  ASSERT_EQ(x.shape(), (Shape{3, 3}));
  EXPECT_EQ(std::vector<float>(x.data<float>(), x.data<float>() + 9),
            (std::vector<float>{4, 9, -1, -1, -1, -1, 1, 2, 3}));
}

TEST_F(FeatureColumnsTest, ListsLongerThanTheirSlotsFailOrAreTruncated) {
  spec_.csv.columns = {"tags:string=", "label:int64"};
  spec_.csv.column_names = {};
  spec_.assemble.inputs = {"tags:ids=3:id=10"};
  ExpectHas(ErrorText([&] { Drain(BuildInputPipeline(spec_, 0, 1)); }),
            "assemble: 'tags' holds 4 ids, more than ids=3 (add :truncate to keep the first 3)");
  // The CSV's record is its physical line, the header being line 0.
  ExpectHas(ErrorText([&] { Drain(BuildInputPipeline(spec_, 0, 1)); }), "offset=48 record=3");
  spec_.assemble.inputs = {"tags:ids=3:id=10:truncate"};
  const auto batches = Drain(BuildInputPipeline(spec_, 0, 1));
  const float* r = batches[0].Get("input").data<float>();
  const std::vector<float> want = {5, 9, 5, -1, -1, -1, 1, 2, 3};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(r[i], want[i]) << i;
}

TEST_F(FeatureColumnsTest, Int64ListsAndSeparators) {
  IdColumn c = ParseIdColumn("v", "ids=4:id=100", "data.assemble", "v:ids=4:id=100");
  c.offset = 7;
  Element e;
  Tensor t(DType::kInt64, {3});
  t.data<int64_t>()[0] = 4;
  t.data<int64_t>()[1] = -1;  // missing: left out
  t.data<int64_t>()[2] = 99;
  e.Set("v", t);
  float out[4];
  WriteIds(c, e, out);
  EXPECT_EQ(std::vector<float>(out, out + 4), (std::vector<float>{11, 106, -1, -1}));
  t.data<int64_t>()[2] = 100;
  ExpectHas(ErrorText([&] { WriteIds(c, e, out); }),
            "assemble: 'v' holds id 100, outside id=100's [0, 100)");
  const IdColumn semi = ParseIdColumn("w", "ids=2:hash=10:sep=;", "k", "w:...");
  Element s;
  const std::string text = "x;;y";
  Tensor bytes(DType::kUInt8, {static_cast<int64_t>(text.size())});
  std::copy(text.begin(), text.end(), bytes.data<uint8_t>());
  s.Set("w", bytes);
  WriteIds(semi, s, out);
  EXPECT_EQ(out[0], Bucket("x", 10));
  EXPECT_EQ(out[1], Bucket("y", 10));
}

TEST_F(FeatureColumnsTest, BadEntriesAndValuesAreNamed) {
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"shop:hash=0", "hash needs a count in [1, 16777216], found '0'"},
      {"shop:hash=20000000", "hash needs a count"},
      {"shop:hash=5:id=5", "unknown or repeated part 'id=5'"},
      {"shop:ids=4", "needs hash=B or id=B"},
      {"shop*user:id=5", "a cross (a*b) takes hash=B and single values only"},
      {"shop*:hash=5", "an empty feature name"},
      {"shop:hash=5:truncate", "truncate and sep= are for lists"},
      {"x:bucket=5|1", "boundaries '5|1' need finite numbers in strictly ascending order"},
      {"x:bucket=", "boundaries '' need finite numbers"}};
  for (const auto& [entry, message] : bad) {
    spec_.assemble.inputs = {entry};
    const std::string text = ErrorText([&] { BuildInputPipeline(spec_, 0, 1); });
    ExpectHas(text, message);
    ExpectHas(text, "data.assemble");
  }
  spec_.assemble.inputs = {"shop:hash=10000000", "tags:ids=2:hash=10000000"};
  ExpectHas(ErrorText([&] { BuildInputPipeline(spec_, 0, 1); }),
            "the id columns' buckets add up to 20000000");
  spec_.assemble.inputs = {"shop:id=10"};
  ExpectHas(ErrorText([&] { Drain(BuildInputPipeline(spec_, 0, 1)); }),
            "assemble: 'shop' holds 'a1', id=10 needs integers");
  spec_.assemble.inputs = {"x:log1p"};
  ExpectHas(ErrorText([&] { Drain(BuildInputPipeline(spec_, 0, 1)); }),
            "assemble: 'x' holds -3.000000, log1p takes counts >= 0");
  spec_.assemble.inputs = {"x:hash=10"};
  ExpectHas(ErrorText([&] { Drain(BuildInputPipeline(spec_, 0, 1)); }),
            "a categorical column needs a string (uint8[n]) or an integer scalar");
}

}  // namespace feature_columns_test
}  // namespace shardflow::pipeline
