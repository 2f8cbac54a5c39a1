// The device a training rank computes on (train.device; apps/common/device_choice.hpp), chosen
// and installed in the parse phase. Header-only because apps/train/main.cpp is compiled once per
// program, with and without the CUDA backend (SHARDFLOW_APP_CUDA, install_device.hpp).
//
// Every strategy runs on a device. Parameter servers hold their slices and run their optimizer
// on the CPU, as TensorFlow's PS tasks do: a server rank takes no GPU (it never runs a layer).
// When a node's GPUs are visible to all its ranks (mpirun or srun without slurm/launch.sh), its
// workers take them in rank order, so a node of 4 GPUs holds 4 workers and a server; under
// slurm/launch.sh each rank is bound to a GPU of its own (a server's stays idle).
// Thread-safety: the main thread, once.
#pragma once

#include <vector>

#include "apps/common/device_choice.hpp"
#include "apps/common/experiment_config.hpp"
#include "apps/common/install_device.hpp"
#include "apps/train/ps_placement.hpp"
#include "apps/train/trainer.hpp"
#include "comm/device_allreduce.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"
#if defined(SHARDFLOW_APP_CUDA)
#include "comm/nccl/nccl_allreduce.hpp"
#endif

namespace shardflow::train {

// This rank's index among the ranks of its node that compute (its GPU when the node's GPUs are
// visible to all its ranks): the local rank, except that parameter servers take none (-1).
inline int ComputeLocalRank(const MpiEnvironment& env, const TrainerOptions& options) {
  if (options.strategy != "parameter_server") return env.local_rank();
  return WorkerGpuIndex(RolesOf(env.size(), options.ps_ranks, options.ps_servers), env.rank(),
                        env.node_of_rank());
}

// Chooses this rank's device (each rank alone: a rank without the GPU asked for stops the job
// with its own line), installs its backend and puts the model there. The simulated device (the
// host twin, SHARDFLOW_SIMULATE_CUDA=1) needs nothing but core; a GPU needs the backend this
// program was linked with (shardflow-train-cuda), and NCCL for the gradients.
inline apps::DeviceChoice UseTrainingDevice(const MpiEnvironment& env,
                                            const apps::ExperimentConfig& config, bool has_backend,
                                            TrainerOptions& options) {
  const int local = ComputeLocalRank(env, options);
  if (local < 0) return {};  // a parameter server: the CPU
  apps::DeviceChoice choice =
      apps::SelectDevice({.device = config.device,
                          .rank = env.rank(),
                          .local_rank = local,
                          .servers_take_no_gpu = options.strategy == "parameter_server",
                          .has_backend = has_backend});
  if (choice.device == Device::kCpu) return choice;
  options.model.device = choice.device;
  if (apps::InstallDevice(choice, config.tf32) == apps::InstalledDevice::kSimulated) {
    // Its stand-in for NCCL: comm/'s all-reduce in place on the simulated device's memory.
    comm::RegisterDeviceAllreduce(comm::MakeSimulatedDeviceAllreduce);
    if (options.device_allreduce == "nccl") {
      SF_LOG0(Info) << "dist.device_allreduce = nccl on the simulated device: comm/'s all-reduce "
                       "in place stands in for NCCL";
    }
    return choice;
  }
#if defined(SHARDFLOW_APP_CUDA)
  comm::RegisterNcclAllreduce();
#endif
  return choice;
}

}  // namespace shardflow::train
