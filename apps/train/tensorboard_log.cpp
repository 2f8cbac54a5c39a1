#include "apps/train/tensorboard_log.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "apps/train/strategy.hpp"
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

void TensorBoardLog::Step(int64_t steps_done, const StepOutput& out, double learning_rate,
                          double samples, double seconds, double input_wait_s) {
  const double t = seconds > 0 ? seconds : 0;
  const auto fraction = [t](double part) { return t > 0 ? part / t : 0.0; };
  std::vector<std::pair<std::string, double>> scalars;
  scalars.reserve(6);
  // A skipped step's loss is not finite: left out.
  if (!out.skipped) scalars.emplace_back(std::string("step/loss"), out.loss);
  scalars.emplace_back(std::string("step/learning_rate"), learning_rate);
  scalars.emplace_back(std::string("step/samples_per_s"), t > 0 ? samples / t : 0.0);
  scalars.emplace_back(std::string("step/input_wait_fraction"), fraction(input_wait_s));
  scalars.emplace_back(std::string("step/compute_fraction"),
                       fraction(std::max(0.0, t - input_wait_s - out.comm_blocked_s)));
  scalars.emplace_back(std::string("step/comm_fraction"), fraction(out.comm_blocked_s));
  train_->AddScalars(steps_done, scalars);
}

void TensorBoardLog::Interval(const nlohmann::json& line, const double* epoch_sums, bool classify) {
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
  const auto step = line["step"].get<int64_t>();
  train_->AddScalars(step, scalars);
  if (epoch_sums != nullptr && epoch_sums[2] > 0) {
    std::vector<std::pair<std::string, double>> epoch = {
        {"epoch_loss", epoch_sums[0] / epoch_sums[2]}};
    if (classify) epoch.emplace_back("epoch_accuracy", epoch_sums[1] / epoch_sums[2]);
    train_->AddScalars(step, epoch);
  }
  train_->Flush();
}

void TensorBoardLog::Evaluation(int64_t steps_done, double loss, double accuracy, double auc) {
  if (!validation_) validation_ = std::make_unique<io::EventWriter>(dir_ + "/validation");
  std::vector<std::pair<std::string, double>> scalars = {{"epoch_loss", loss}};
  if (accuracy >= 0) scalars.emplace_back("epoch_accuracy", accuracy);
  if (auc >= 0) scalars.emplace_back("epoch_auc", auc);  // false for NaN
  validation_->AddScalars(steps_done, scalars);
  validation_->Flush();
}

void TensorBoardLog::Histograms(int64_t steps_done, Sequential<float>* model, int64_t every) {
  if (model == nullptr || every <= 0 || steps_done % every != 0) return;
  Arena<float>& arena = model->arena();
  // Host copies (the arena's own memory on the CPU): a model on a device hands them over.
  const Tensor params = arena.params_tensor().To(Device::kCpu);
  const Tensor grads = arena.grads_tensor().To(Device::kCpu);
  for (int id = 0; id < arena.num_params(); ++id) {
    const ParamSpec& spec = arena.spec(id);
    const auto count = static_cast<size_t>(spec.size);
    train_->AddHistogram("weights/" + spec.FullName(), steps_done,
                         params.data<float>() + spec.offset, count);
    train_->AddHistogram("gradients/" + spec.FullName(), steps_done,
                         grads.data<float>() + spec.offset, count);
  }
  train_->Flush();
}

}  // namespace shardflow::train
