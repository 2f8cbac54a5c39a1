// data.check_finite: a NaN or Inf in a float feature of a TFRecord Example is a bad record,
// handled by data.on_corrupt like a damaged one: fail names the file, record and feature; skip
// drops exactly those records and counts them; check_finite = false lets them through.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "io/example.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/sources/tfrecord_source.hpp"
#include "io/tfrecord_writer.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace data_check_finite_test {

constexpr int64_t kRecords = 20;
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();
// Record index -> the bad value and where in the 3 floats of feature x it sits.
const std::map<int64_t, std::pair<float, int>> kBad = {
    {3, {kNaN, 0}}, {7, {kInf, 1}}, {12, {-kInf, 0}}, {15, {kNaN, 2}}};

std::string WriteFile(const shardflow::testing::ScratchDir& dir) {
  const std::string path = (dir / "mixed.tfrecord").string();
  io::TFRecordWriter w(path);
  for (int64_t r = 0; r < kRecords; ++r) {
    std::vector<float> x = {static_cast<float>(r), 0.5f, -1.0f};
    if (auto it = kBad.find(r); it != kBad.end()) x[it->second.second] = it->second.first;
    io::ExampleBuilder b;
    b.AddFloat("x", std::span<const float>(x)).AddInt64("label", {r});
    w.Write(b.Serialize());
  }
  w.Close();
  return path;
}

InputSpec Spec(const std::string& path, const std::string& on_corrupt, bool check_finite) {
  InputSpec s;
  s.data.files = {path};
  s.data.shuffle_buffer = 0;
  s.data.batch_size = 1;
  s.data.epochs = 1;
  s.data.check_finite = check_finite;
  s.data.parallel_calls = 0;
  s.data.prefetch = 0;
  s.features = {"x:float:float32:3", "label:int64:int64:scalar"};
  s.on_corrupt = on_corrupt;
  return s;
}

// The labels (= record indices) the pipeline delivers, in order.
std::vector<int64_t> Labels(const InputSpec& spec) {
  PipelineIterator it = BuildInputPipeline(spec, 0, 1).MakeIterator();
  Element e;
  std::vector<int64_t> labels;
  while (it.Next(&e)) labels.push_back(e.Get("label").data<int64_t>()[0]);
  return labels;
}

TEST(DataCheckFinite, FailNamesFileRecordAndFeature) {
  shardflow::testing::ScratchDir dir("check_finite_fail");
  const std::string path = WriteFile(dir);
  try {
    Labels(Spec(path, "fail", true));
    FAIL() << "a NaN feature passed";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << what;
    EXPECT_NE(what.find("non-finite value (nan) at index 0 of float feature 'x'"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("file=" + path), std::string::npos) << what;
    EXPECT_NE(what.find("record=3"), std::string::npos) << what;
    EXPECT_NE(what.find("key=x"), std::string::npos) << what;
  }
}

TEST(DataCheckFinite, SkipDropsExactlyTheBadRecordsAndCountsThem) {
  shardflow::testing::ScratchDir dir("check_finite_skip");
  const std::string path = WriteFile(dir);
  std::vector<int64_t> want;
  for (int64_t r = 0; r < kRecords; ++r) {
    if (!kBad.count(r)) want.push_back(r);
  }
  EXPECT_EQ(Labels(Spec(path, "skip", true)), want);
  // The source's count, reader by reader as the pipeline uses it (two passes: 8 skips).
  TFRecordSource source({path}, {.on_corrupt = io::OnCorrupt::kSkip, .finite_features = {"x"}});
  for (int pass = 1; pass <= 2; ++pass) {
    auto reader = source.Open(0, ByteRange{});
    Element e;
    std::vector<int64_t> records;
    while (reader->Next(&e)) records.push_back(e.where.record);
    EXPECT_EQ(records, want);
    EXPECT_EQ(source.nonfinite_skipped(), pass * static_cast<int64_t>(kBad.size()));
  }
}

TEST(DataCheckFinite, OffLetsThemThrough) {
  shardflow::testing::ScratchDir dir("check_finite_off");
  const std::string path = WriteFile(dir);
  PipelineIterator it = BuildInputPipeline(Spec(path, "fail", false), 0, 1).MakeIterator();
  Element e;
  int64_t rows = 0, nonfinite = 0;
  while (it.Next(&e)) {
    ++rows;
    const float* x = e.Get("x").data<float>();
    for (int i = 0; i < 3; ++i) nonfinite += !std::isfinite(x[i]);
  }
  EXPECT_EQ(rows, kRecords);
  EXPECT_EQ(nonfinite, static_cast<int64_t>(kBad.size()));
}

}  // namespace data_check_finite_test
}  // namespace shardflow::pipeline
