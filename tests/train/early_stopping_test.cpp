// train.early_stopping (apps/train/early_stopping.hpp): what it accepts, and when it stops.
#include "apps/train/early_stopping.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.hpp"
#include "core/metrics.hpp"

namespace shardflow::train {
namespace early_stopping_test {

std::string Refusal(const std::string& text, bool classify = true, bool has_eval = true) {
  try {
    ParseEarlyStopping(text, classify, has_eval);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.early_stopping"), std::string::npos) << e.what();
    return e.what();
  }
  return "";
}

TEST(EarlyStopping, ParsesMetricAndPatience) {
  EXPECT_FALSE(ParseEarlyStopping("", true, false).on());
  const EarlyStoppingOptions o = ParseEarlyStopping("eval_accuracy:3", true, true);
  EXPECT_EQ(o.metric, "eval_accuracy");
  EXPECT_EQ(o.patience, 3);
  EXPECT_EQ(ParseEarlyStopping("val_loss:2", false, true).metric, "eval_loss");  // Keras' name
  EXPECT_NE(Refusal("loss:3").find("eval_loss, eval_accuracy or eval_auc"), std::string::npos);
  EXPECT_NE(Refusal("eval_loss").find("patience"), std::string::npos);
  EXPECT_NE(Refusal("eval_loss:0").find("patience"), std::string::npos);
  EXPECT_NE(Refusal("eval_loss:2x").find("patience"), std::string::npos);
  EXPECT_NE(Refusal("eval_accuracy:2", false).find("no accuracy"), std::string::npos);
  EXPECT_NE(Refusal("eval_loss:2", true, false).find("no evaluation set"), std::string::npos);
}

TEST(EarlyStopping, StopsAfterPatienceEvaluationsWithoutImprovement) {
  EarlyStopping loss({.metric = "eval_loss", .patience = 2});
  using V = EarlyStopping::Verdict;
  EXPECT_EQ(loss.Observe(10, 1.0, 0), V::kImproved);
  EXPECT_EQ(loss.Observe(20, 0.8, 0), V::kImproved);
  EXPECT_EQ(loss.Observe(30, 0.8, 0), V::kWaiting);   // equal is not better
  EXPECT_EQ(loss.Observe(40, 0.7, 0), V::kImproved);  // the count starts again
  EXPECT_EQ(loss.Observe(50, 0.9, 0), V::kWaiting);
  EXPECT_EQ(loss.Observe(60, 0.75, 0), V::kStop);
  EXPECT_EQ(loss.best_step(), 40);
  EXPECT_DOUBLE_EQ(loss.best(), 0.7);

  EarlyStopping accuracy({.metric = "eval_accuracy", .patience = 1});
  EXPECT_EQ(accuracy.Observe(10, 9.0, 0.5), V::kImproved);
  EXPECT_EQ(accuracy.Observe(20, 0.1, 0.6), V::kImproved);  // the loss does not count
  EXPECT_EQ(accuracy.Observe(30, 0.1, 0.55), V::kStop);
  EXPECT_EQ(accuracy.best_step(), 20);

  EarlyStopping auc({.metric = "eval_auc", .patience = 2});
  EXPECT_EQ(auc.Observe(10, 1.0, 0.5, 0.70), V::kImproved);
  EXPECT_EQ(auc.Observe(20, 0.1, 0.9, 0.69), V::kWaiting);       // loss and accuracy do not count
  EXPECT_EQ(auc.Observe(30, 0.1, 0.9, std::nan("")), V::kStop);  // one class absent: no better
  EXPECT_EQ(auc.best_step(), 10);
  EarlyStopping no_auc({.metric = "eval_auc", .patience = 2});
  EXPECT_THROW(no_auc.Observe(10, 1.0, 0.5), Error);  // not a binary classifier
}

TEST(ExactAuc, CountsPairsWithTiesAsHalves) {
  // Positives 0.9, 0.5; negatives 0.5, 0.1: pairs (0.9>0.5) (0.9>0.1) (0.5=0.5 half) (0.5>0.1).
  EXPECT_DOUBLE_EQ(ExactAuc({0.5, 0.9, 0.1, 0.5}, {1, 1, 0, 0}), 3.5 / 4);
  EXPECT_DOUBLE_EQ(ExactAuc({1, 2, 3}, {0, 1, 1}), 1.0);
  EXPECT_DOUBLE_EQ(ExactAuc({1, 2, 3}, {1, 1, 0}), 0.0);
  EXPECT_DOUBLE_EQ(ExactAuc({4, 4, 4, 4}, {1, 0, 1, 0}), 0.5);
  EXPECT_TRUE(std::isnan(ExactAuc({1, 2}, {1, 1})));
  EXPECT_TRUE(std::isnan(ExactAuc({}, {})));
  // Against the count of pairs on a larger sample with many ties.
  std::vector<double> s;
  std::vector<uint8_t> y;
  for (int i = 0; i < 300; ++i) {
    s.push_back(static_cast<double>((i * 37) % 23));
    y.push_back(static_cast<uint8_t>((i * 11) % 7 < 3));
  }
  double wins = 0, pairs = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    for (size_t j = 0; j < s.size(); ++j) {
      if (y[i] != 1 || y[j] != 0) continue;
      pairs += 1;
      wins += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
    }
  }
  EXPECT_NEAR(ExactAuc(s, y), wins / pairs, 1e-12);
}

}  // namespace early_stopping_test
}  // namespace shardflow::train
