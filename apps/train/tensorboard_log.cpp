#include "apps/train/tensorboard_log.hpp"

#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "core/logging.hpp"
#include "io/tensorboard/event_writer.hpp"

namespace shardflow::train {

TensorBoardLog::TensorBoardLog(const std::string& dir, int64_t resumed_step) : dir_(dir) {
  if (resumed_step > 0) {
    const int64_t dropped = io::DropEventsAfter(dir + "/train", resumed_step) +
                            io::DropEventsAfter(dir + "/validation", resumed_step);
    if (dropped > 0) {
      SF_LOG(Warn) << "--resume at step " << resumed_step << ": dropped " << dropped
                   << " TensorBoard events past it from " << dir
                   << " (written after that checkpoint by the run that stopped)";
    }
  }
  train_ = std::make_unique<io::EventWriter>(dir + "/train");
}

TensorBoardLog::~TensorBoardLog() = default;

void TensorBoardLog::Interval(const nlohmann::json& line) {
  // metrics.jsonl key -> TensorBoard tag.
  static const std::pair<const char*, const char*> kTags[] = {
      {"loss", "loss"},
      {"accuracy", "accuracy"},
      {"lr", "learning_rate"},
      {"samples_per_s", "samples_per_s"},
      {"input_wait_fraction", "time/input_wait_fraction"},
      {"compute_fraction", "time/compute_fraction"},
      {"comm_fraction", "time/comm_fraction"}};
  std::vector<std::pair<std::string, double>> scalars;
  for (const auto& [key, tag] : kTags) {
    if (line.contains(key)) scalars.emplace_back(tag, line[key].get<double>());
  }
  train_->AddScalars(line["step"].get<int64_t>(), scalars);
  train_->Flush();
}

void TensorBoardLog::EpochEnd(int64_t steps_done, double loss, double accuracy) {
  std::vector<std::pair<std::string, double>> scalars = {{"epoch_loss", loss}};
  if (accuracy >= 0) scalars.emplace_back("epoch_accuracy", accuracy);
  train_->AddScalars(steps_done, scalars);
  train_->Flush();
}

void TensorBoardLog::Evaluation(int64_t steps_done, double loss, double accuracy) {
  if (!validation_) validation_ = std::make_unique<io::EventWriter>(dir_ + "/validation");
  std::vector<std::pair<std::string, double>> scalars = {{"epoch_loss", loss}};
  if (accuracy >= 0) scalars.emplace_back("epoch_accuracy", accuracy);
  validation_->AddScalars(steps_done, scalars);
  validation_->Flush();
}

void TensorBoardLog::Histograms(int64_t steps_done, Sequential<float>& model) {
  Arena<float>& arena = model.arena();
  for (int id = 0; id < arena.num_params(); ++id) {
    const ParamSpec& spec = arena.spec(id);
    const auto count = static_cast<size_t>(spec.size);
    train_->AddHistogram("weights/" + spec.FullName(), steps_done, arena.param(id), count);
    train_->AddHistogram("gradients/" + spec.FullName(), steps_done, arena.grad(id), count);
  }
  train_->Flush();
}

}  // namespace shardflow::train
