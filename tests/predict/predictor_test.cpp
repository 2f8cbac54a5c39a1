// PredictDataset, SoftmaxRow and ReconstructionError on in-memory records: per-record ids (id
// feature or element id), batches that do not divide the record count, softmax against a naive
// twin.
#include "apps/common/prediction/predictor.hpp"
#include "apps/common/prediction/record_outputs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.hpp"

namespace shardflow::apps {
namespace predictor_test {

// Naive twin of SoftmaxRow: exp without the max shift (fine for small logits).
std::vector<double> NaiveSoftmax(const std::vector<float>& logits) {
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v));
  std::vector<double> p;
  for (float v : logits) p.push_back(std::exp(static_cast<double>(v)) / sum);
  return p;
}

TEST(SoftmaxRow, MatchesNaiveAndPicksFirstMaximum) {
  const std::vector<float> logits = {0.5f, -1.25f, 2.0f, 2.0f, 0.0f};
  std::vector<float> probs(logits.size());
  EXPECT_EQ(SoftmaxRow(logits.data(), 5, probs.data()), 2);
  const std::vector<double> want = NaiveSoftmax(logits);
  for (size_t j = 0; j < logits.size(); ++j) EXPECT_NEAR(probs[j], want[j], 1e-7) << j;
}

TEST(SoftmaxRow, LargeLogitsStayFinite) {
  const std::vector<float> logits = {1000.0f, 999.0f, -1000.0f};
  std::vector<float> probs(3);
  EXPECT_EQ(SoftmaxRow(logits.data(), 3, probs.data()), 0);
  EXPECT_NEAR(probs[0], 1 / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(probs[1], std::exp(-1.0) / (1 + std::exp(-1.0)), 1e-6);
  EXPECT_EQ(probs[2], 0.0f);
}

TEST(ReconstructionError, MeanOfSquaredDifferences) {
  const std::vector<float> output = {1.0f, 2.0f, 3.5f};
  const std::vector<float> input = {0.0f, 2.0f, 5.5f};
  EXPECT_DOUBLE_EQ(ReconstructionError(output.data(), input.data(), 3), 5.0 / 3.0);
  EXPECT_EQ(ReconstructionError(output.data(), input.data(), 0), 0.0);
}

// n records of 4 floats, labels i % 3, ids 100 + i except every fourth record (-1: no id).
pipeline::Dataset Records(int64_t n, bool with_ids, bool with_labels) {
  Tensor x(DType::kFloat32, {n, 4});
  Tensor labels(DType::kInt64, {n});
  Tensor ids(DType::kInt64, {n});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < 4; ++j) x.data<float>()[i * 4 + j] = std::sin(0.3f * (i * 4 + j));
    labels.data<int64_t>()[i] = i % 3;
    ids.data<int64_t>()[i] = i % 4 == 3 ? -1 : 100 + i;
  }
  std::vector<std::pair<std::string, Tensor>> columns = {{"x", x}};
  if (with_labels) columns.emplace_back("label", labels);
  if (with_ids) columns.emplace_back("id", ids);
  return pipeline::Dataset::FromTensors(columns).Batch(1);
}

PredictorSpec Spec(int64_t batch, apps::Task task = apps::Task::kClassify) {
  PredictorSpec s;
  s.batch = {.input_feature = "x", .label_feature = "label", .input_shape = {4}, .scale = 1.0};
  s.task = task;
  s.id_feature = "id";
  s.batch_size = batch;
  return s;
}

TEST(PredictDataset, EveryRecordOnceWithItsIdAnyBatchSize) {
  Sequential<float> model("dense:3", {4});
  const PredictionRows whole = PredictDataset(model, Records(10, true, true), Spec(10));
  ASSERT_EQ(whole.rows(), 10);
  ASSERT_EQ(whole.num_classes, 3);
  for (int64_t i = 0; i < 10; ++i) {
    EXPECT_EQ(whole.ids[i], i % 4 == 3 ? i : 100 + i) << "record " << i;
  }
  for (int64_t batch : {1, 3, 7, 64}) {
    const PredictionRows r = PredictDataset(model, Records(10, true, true), Spec(batch));
    EXPECT_EQ(r.ids, whole.ids) << "batch " << batch;
    EXPECT_EQ(r.classes, whole.classes) << "batch " << batch;
    ASSERT_EQ(r.probabilities.size(), 30u);
    for (size_t j = 0; j < 30; ++j) EXPECT_NEAR(r.probabilities[j], whole.probabilities[j], 1e-6);
    EXPECT_EQ(r.labelled, 10);
    EXPECT_EQ(r.correct, whole.correct);
  }
  // The classes and accuracy agree with the model's own logits.
  Tensor x(DType::kFloat32, {10, 4});
  for (int64_t k = 0; k < 40; ++k) x.data<float>()[k] = std::sin(0.3f * k);
  const Tensor logits = model.Forward(x, false);
  int64_t correct = 0;
  for (int64_t i = 0; i < 10; ++i) {
    std::vector<float> row(logits.data<float>() + i * 3, logits.data<float>() + i * 3 + 3);
    const std::vector<double> p = NaiveSoftmax(row);
    for (int64_t j = 0; j < 3; ++j) EXPECT_NEAR(whole.probabilities[i * 3 + j], p[j], 1e-6);
    correct += whole.classes[i] == i % 3;
  }
  EXPECT_EQ(whole.correct, correct);
}

TEST(PredictDataset, ElementIdsWithoutIdFeatureAndNoLabels) {
  Sequential<float> model("dense:2", {4});
  const PredictionRows r = PredictDataset(model, Records(5, false, false), Spec(2));
  ASSERT_EQ(r.rows(), 5);
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(r.ids[i], i);
  EXPECT_EQ(r.labelled, 0);
}

TEST(PredictDataset, EmptyInputGivesNoRows) {
  Sequential<float> model("dense:2", {4});
  const PredictionRows r = PredictDataset(model, Records(0, true, true), Spec(4));
  EXPECT_EQ(r.rows(), 0);
  EXPECT_TRUE(r.probabilities.empty());
}

TEST(PredictDataset, ReconstructionErrorPerRecord) {
  Sequential<float> model("dense:4", {4});
  const PredictionRows r =
      PredictDataset(model, Records(6, true, false), Spec(4, apps::Task::kReconstruct));
  ASSERT_EQ(r.errors.size(), 6u);
  Tensor x(DType::kFloat32, {6, 4});
  for (int64_t k = 0; k < 24; ++k) x.data<float>()[k] = std::sin(0.3f * k);
  const Tensor y = model.Forward(x, false);
  double sum = 0;
  for (int64_t i = 0; i < 6; ++i) {
    double want = 0;
    for (int64_t j = 0; j < 4; ++j) {
      const double d = y.data<float>()[i * 4 + j] - x.data<float>()[i * 4 + j];
      want += d * d / 4;
    }
    EXPECT_NEAR(r.errors[i], want, 1e-6) << i;
    sum += want;
  }
  EXPECT_NEAR(r.error_sum, sum, 1e-5);
}

TEST(PredictDataset, WrongInputWidthNamesTheFeature) {
  Sequential<float> model("dense:2", {5});
  PredictorSpec s = Spec(4);
  s.batch.input_shape = {5};
  try {
    PredictDataset(model, Records(3, true, true), s);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("x"), std::string::npos) << e.what();
  }
}

}  // namespace predictor_test
}  // namespace shardflow::apps
