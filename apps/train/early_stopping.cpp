#include "apps/train/early_stopping.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "core/error.hpp"

namespace shardflow::train {

EarlyStoppingOptions ParseEarlyStopping(const std::string& text, bool classify, bool has_eval) {
  if (text.empty()) return {};
  auto refuse = [&](const std::string& what, const std::string& hint) {
    throw Error(ErrorCode::kInvalidArgument, "train.early_stopping = '" + text + "': " + what,
                {.key = "train.early_stopping", .hint = hint});
  };
  const size_t colon = text.find(':');
  EarlyStoppingOptions o;
  o.metric = text.substr(0, colon);
  if (o.metric == "val_loss") o.metric = "eval_loss";  // Keras' names for the same
  if (o.metric == "val_accuracy") o.metric = "eval_accuracy";
  if (o.metric == "val_auc") o.metric = "eval_auc";
  if (o.metric != "eval_loss" && o.metric != "eval_accuracy" && o.metric != "eval_auc") {
    refuse("the metric must be eval_loss, eval_accuracy or eval_auc", "e.g. eval_loss:3");
  }
  const std::string count = colon == std::string::npos ? "" : text.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  o.patience = std::strtoll(count.c_str(), &end, 10);
  if (count.empty() || *end != '\0' || errno == ERANGE || o.patience < 1) {
    refuse("the patience must be a count of evaluations >= 1", "e.g. " + o.metric + ":3");
  }
  if (o.metric != "eval_loss" && !classify) {
    refuse("a reconstruction has no accuracy or AUC", "eval_loss:" + count);
  }
  if (!has_eval) {
    refuse("it watches the evaluation, and there is no evaluation set",
           "set eval.files, or leave train.early_stopping empty");
  }
  return o;
}

EarlyStopping::Verdict EarlyStopping::Observe(int64_t steps_done, double loss, double accuracy,
                                              std::optional<double> auc) {
  if (o_.metric == "eval_auc" && !auc) {
    throw Error(ErrorCode::kInvalidArgument,
                "train.early_stopping watches eval_auc, and the model is not a binary classifier "
                "(two logits per sample)",
                {.key = "train.early_stopping", .hint = "eval_loss or eval_accuracy"});
  }
  const double value = o_.metric == "eval_loss"       ? loss
                       : o_.metric == "eval_accuracy" ? accuracy
                                                      : *auc;
  if (std::isnan(value)) {  // an AUC with one class absent improves nothing
    ++waited_;
    return waited_ >= o_.patience ? Verdict::kStop : Verdict::kWaiting;
  }
  const bool better = !seen_ || (o_.metric == "eval_loss" ? value < best_ : value > best_);
  if (better) {
    seen_ = true;
    best_ = value;
    best_step_ = steps_done;
    waited_ = 0;
    return Verdict::kImproved;
  }
  ++waited_;
  return waited_ >= o_.patience ? Verdict::kStop : Verdict::kWaiting;
}

}  // namespace shardflow::train
