#include "apps/predict/prepare.hpp"

#include <string>
#include <vector>

#include "apps/common/device_choice.hpp"
#include "apps/common/install_device.hpp"
#include "apps/common/prediction/predictor.hpp"
#include "apps/common/use_precision.hpp"
#include "core/cpu/gemm.hpp"
#include "core/logging.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/list_files.hpp"

// shardflow-predict-cuda compiles this file with the CUDA backend (apps/predict/CMakeLists.txt).
#if defined(SHARDFLOW_APP_CUDA)
constexpr bool kHasCudaBackend = true;
#else
constexpr bool kHasCudaBackend = false;
#endif

namespace shardflow::predict {
namespace {

// Puts the model on the chosen device: the simulated one (SHARDFLOW_SIMULATE_CUDA=1) or, in
// shardflow-predict-cuda, the rank's GPU; each rank of a grid its part's.
void UseDevice(const apps::DeviceChoice& choice, bool tf32, apps::ModelSetup* options) {
  if (choice.device == Device::kCpu) return;
  options->model.device = choice.device;
  apps::InstallDevice(choice, tf32);
}

}  // namespace

void Prepare(MpiEnvironment& env, PredictAppConfig* config, Prepared* p) {
  PrepareInputSpec(config);
  const bool generate = !config->generate.empty();
  if (!generate) {
    pipeline::CheckInputFilesMatch(config->train.data,
                                   config->input.empty() ? "data.files" : "--input");
  }
  // Each rank alone, before the model is loaded (apps/common/device_choice.hpp).
  const apps::DeviceChoice device = apps::SelectDevice({.device = config->train.device,
                                                        .work = "predicting",
                                                        .rank = env.rank(),
                                                        .local_rank = env.local_rank(),
                                                        .has_backend = kHasCudaBackend});
  p->options = apps::MakeModelSetup(config->train);
  const int threads = apps::ResolveThreads(config->train, env.local_size());
  cpu::SetIntraOpThreads(threads);
  if (env.local_rank() == 0) {  // once per node
    const std::string w =
        apps::ThreadsOverBindingWarning(threads, cpu::BoundCores(), "train.threads");
    if (!w.empty()) SF_LOG(Warn) << w;
  }
  // A model split over ranks predicts on the grid it is given ([dist] pipeline_stages,
  // tensor_parallel), whatever grid trained it: a usage error when the ranks do not factor.
  p->grid =
      apps::MakeGridShape(env.size(), config->train.pipeline_stages, config->train.tensor_parallel);
  UseDevice(device, config->train.tf32, &p->options);
  apps::UsePrecision(config->train.precision, device.device, env.is_chief());
  p->plan = apps::PlanRank(p->options, p->grid,
                           std::vector<int>(config->train.stage_boundaries.begin(),
                                            config->train.stage_boundaries.end()),
                           env.rank());
  p->output_shape = DescribeLayers(p->options.model_spec, p->options.input_shape, p->options.model)
                        .back()
                        .output_shape;
  apps::ModelSetup part = p->options;
  if (p->grid.ways > 1) {
    part.model.tensor_parallel = {
        .way = p->plan.place.way, .ways = p->grid.ways, .sum_float = [p](float* x, int64_t n) {
          (*p->tensor_sum)(x, n);
        }};
  }
  // Errors found here (missing checkpoint or input, a checkpoint that does not fit the model)
  // end every rank with one line and the same exit code.
  p->loaded = apps::LoadModel(part, config->checkpoint, p->plan.range);
  if (generate && (p->grid.stages > 1 || p->grid.ways > 1)) {
    throw Error(ErrorCode::kInvalidArgument,
                "--generate runs the whole model on each rank: no pipeline stages or tensor ways",
                {.key = "--generate"});
  }
  if (!generate) {
    p->local_records =
        pipeline::CountLocalRecords(config->train.data, p->plan.place.replica, p->grid.replicas);
  }
}

}  // namespace shardflow::predict
