// The device a training rank computes on (train.device; apps/common/device_choice.hpp), chosen
// and installed in the parse phase. Header-only because apps/train/main.cpp is compiled once per
// program, with and without the CUDA backend (SHARDFLOW_APP_CUDA, install_device.hpp).
//
// Every strategy runs on a device. Which ranks take a GPU is the strategy's rank plan
// (TrainerOptions::plan, strategy_unit.hpp): a rank that never runs a layer (a parameter server)
// takes none and stays on the CPU; when a node's GPUs are visible to all its ranks (mpirun or
// srun without slurm/launch.sh), the ranks that take one take them in rank order
// (compute_index); under slurm/launch.sh each rank is bound to a GPU of its own.
// Thread-safety: the main thread, once.
#pragma once

#include <vector>

#include "apps/common/device_choice.hpp"
#include "apps/common/experiment_config.hpp"
#include "apps/common/install_device.hpp"
#include "apps/train/trainer.hpp"
#include "comm/device_allreduce.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"
#if defined(SHARDFLOW_APP_CUDA)
#include "comm/nccl/nccl_allreduce.hpp"
#endif

namespace shardflow::train {

// Chooses this rank's device (each rank alone: a rank without the GPU asked for stops the job
// with its own line), installs its backend and puts the model there. The simulated device (the
// host twin, SHARDFLOW_SIMULATE_CUDA=1) needs nothing but core; a GPU needs the backend this
// program was linked with (shardflow-train-cuda), and NCCL for the gradients.
inline apps::DeviceChoice UseTrainingDevice(const MpiEnvironment& env,
                                            const apps::ExperimentConfig& config, bool has_backend,
                                            TrainerOptions& options) {
  const RankRole& role = options.plan.ranks.at(static_cast<size_t>(env.rank()));
  if (!role.takes_gpu) return {};  // it never runs a layer: the CPU
  bool some_take_none = false;
  for (const RankRole& r : options.plan.ranks) some_take_none = some_take_none || !r.takes_gpu;
  apps::DeviceChoice choice = apps::SelectDevice({.device = config.device,
                                                  .rank = env.rank(),
                                                  .local_rank = role.compute_index,
                                                  .servers_take_no_gpu = some_take_none,
                                                  .has_backend = has_backend});
  if (choice.device == Device::kCpu) return choice;
  options.model.device = choice.device;
  apps::DeviceExtras extras;
  // The simulated device's stand-in for NCCL: comm/'s all-reduce in place on its memory.
  extras.simulated = comm::MakeDeviceCollectives(comm::MakeSimulatedDeviceAllreduce);
#if defined(SHARDFLOW_APP_CUDA)
  extras.gpu = comm::NcclCollectives();
#endif
  if (apps::InstallDevice(choice, config.tf32, extras) == apps::InstalledDevice::kSimulated &&
      options.device_allreduce == "nccl") {
    SF_LOG0(Info) << "dist.device_allreduce = nccl on the simulated device: comm/'s all-reduce "
                     "in place stands in for NCCL";
  }
  return choice;
}

}  // namespace shardflow::train
