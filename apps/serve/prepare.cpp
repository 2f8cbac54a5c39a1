#include "apps/serve/prepare.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "apps/common/device_choice.hpp"
#include "apps/common/install_device.hpp"
#include "apps/common/prediction/predictor.hpp"
#include "apps/common/use_precision.hpp"
#include "core/cpu/gemm.hpp"
#include "core/error.hpp"

// shardflow-serve-cuda compiles this file with the CUDA backend (apps/serve/CMakeLists.txt):
// with train.device = cuda it serves from the rank's GPU, one replica.
#if defined(SHARDFLOW_APP_CUDA)
#include "core/cuda/cuda_backend.hpp"
constexpr bool kHasCudaBackend = true;
#else
constexpr bool kHasCudaBackend = false;
#endif

namespace shardflow::serve {
namespace {

// Puts the model on the chosen device: the simulated one (SHARDFLOW_SIMULATE_CUDA=1) or, in
// shardflow-serve-cuda, the rank's GPU, with one replica (the backend runs one stream).
void UseDevice(const apps::DeviceChoice& choice, const ServeAppConfig& config,
               apps::ModelSetup* setup, Prepared* p) {
  if (choice.device == Device::kCpu) return;
  if (config.num_replicas != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "train.device = cuda serves with one replica per process, not " +
                    std::to_string(config.num_replicas),
                {.key = "serve.num_replicas",
                 .hint = "serve.num_replicas = 1 (a GPU batches the requests: raise "
                         "serve.max_batch_size), or one rank per GPU"});
  }
  setup->model.device = choice.device;
  const apps::InstalledDevice installed = apps::InstallDevice(choice, config.train.tf32);
#if defined(SHARDFLOW_APP_CUDA)
  if (installed == apps::InstalledDevice::kGpu) p->thread_setup = [] { cuda::UseOnThisThread(); };
#else
  (void)installed;
  (void)p;
#endif
}

}  // namespace

void Prepare(MpiEnvironment& env, const ServeAppConfig& config, Prepared* p) {
  p->port = CheckServeFlags(config);
  // First, before the model loads: a taken port fails the start at once.
  p->socket = OpenListenSocket(config.host, p->port == 0 ? 0 : p->port + env.rank(),
                               config.reuse_port, /*backlog=*/1024);
  // Each rank alone, before the model is loaded (apps/common/device_choice.hpp).
  const apps::DeviceChoice device = apps::SelectDevice({.device = config.train.device,
                                                        .work = "serving",
                                                        .rank = env.rank(),
                                                        .local_rank = env.local_rank(),
                                                        .has_backend = kHasCudaBackend});
  apps::ModelSetup setup = apps::MakeModelSetup(config.train);
  UseDevice(device, config, &setup, p);
  // On every device: the CPU too (a CPU server once left train.precision = bf16 unapplied).
  apps::UsePrecision(config.train.precision, device.device, true);
  // Replicas share the rank's cores: each runs its kernels on its share.
  p->threads =
      std::max(1, apps::ResolveThreads(config.train, env.local_size()) / config.num_replicas);
  cpu::SetIntraOpThreads(p->threads);
  const Shape output_shape =
      DescribeLayers(setup.model_spec, setup.input_shape, setup.model).back().output_shape;
  apps::CheckOneClassPerRecord(setup.task, output_shape, "shardflow-serve");
  p->sig = MakeSignature(config.train, setup, output_shape);
  // A missing checkpoint or one that does not fit the model: one line, exit 2.
  ModelPool::Loader loader = CheckpointLoader(setup, config.checkpoint, config.num_replicas);
  if (p->thread_setup) {  // a reload runs on the watcher's or an HTTP thread
    loader = [loader, setup_thread = p->thread_setup] {
      setup_thread();
      return loader();
    };
  }
  p->pool = std::make_unique<ModelPool>(std::move(loader), NewestCheckpoint(config.checkpoint));
}

}  // namespace shardflow::serve
