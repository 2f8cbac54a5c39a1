// shardflow-train: training by the ranks of an MPI job, one process per rank, under any
// registered strategy (data-parallel by default; model-parallel grids, parameter servers).
//   mpirun -np N shardflow-train --config FILE [--section.key=value ...] [--output DIR]
//       [--resume[=auto]] [--overwrite] [--check] [--no-progress]
// Parse, check (run_checks.hpp: every rank alike, one line, exit 2), then Run or DryRun
// (run.hpp).
#include <cstdio>
#include <filesystem>
#include <thread>

#include "apps/common/device_choice.hpp"
#include "apps/common/use_precision.hpp"
#include "apps/train/memory_guard.hpp"
#include "apps/train/run.hpp"
#include "apps/train/run_checks.hpp"
#include "apps/train/strategy_unit.hpp"
#include "apps/train/train_device.hpp"
#include "apps/train/trainer_options.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"
#include "io/pipeline/input_pipeline.hpp"

// shardflow-train-cuda is this file linked with the CUDA backend (apps/train/CMakeLists.txt).
#if defined(SHARDFLOW_APP_CUDA)
constexpr bool kHasCudaBackend = true;
#else
constexpr bool kHasCudaBackend = false;
#endif

int main(int argc, char** argv) {
  using namespace shardflow;
  apps::ExperimentConfig config;
  train::TrainerOptions options;
  ConfigSchema schema;
  bool check = false;
  int64_t local_batches = 0;
  apps::DeviceChoice device;
  train::StrategySchema strategies;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment& env) {
        apps::RegisterExperimentConfig(schema, &config);
        train::DisownTrainerSetKeys(schema);
        strategies = train::DescribeStrategies(schema);
        AppSpec app(
            "shardflow-train",
            "training; run one process per rank under mpirun or srun.\n" + train::StrategiesHelp());
        app.Flag("output", &config.output, "DIR",
                 "outputs: resolved.ini, metrics.jsonl, summary.json, checkpoints/, traces")
            .OptionalValue("resume", &config.resume, "latest", {"latest", "auto"},
                           "continue from the newest checkpoint (an error when there is none); "
                           "=auto: continue if there is one, else start fresh")
            .Switch("no-progress", &config.no_progress, "no progress bar")
            .Switch("overwrite", &config.overwrite,
                    "start afresh in an OUTPUT that holds a previous run: its checkpoints and "
                    "metrics are removed first (without it such an OUTPUT is refused)")
            .Switch("check", &check,
                    "dry run: resolve the config, list the files, count records and steps per "
                    "rank, estimate memory, and exit without training or writing")
            .RequireConfig(true)
            .PrintResolved(false);  // printed below, once the checks have passed
        ParseCommandLine(argc, argv, schema, app);
        train::RefuseTrainerSetKeys(schema);
        options = train::MakeTrainerOptions(
            config, schema, strategies, {.ranks = env.size(), .node_of_rank = env.node_of_rank()},
            schema.ResolvedIni());
        // Each rank alone, before the costly checks: a rank without the GPU asked for stops the
        // job with its own line (no collective in the parse phase; RunMain agrees on failures).
        device = train::UseTrainingDevice(env, config, kHasCudaBackend, options);
        apps::UsePrecision(config.precision, device.device, env.is_chief());
        train::SetReplicaBatch(train::ShardOf(options, env.rank()).index, &options);
        train::CheckInputs(&options);
        train::CheckFreshOutput(options, config.overwrite);
        train::CheckResumable(options);
        if (!check) train::CheckCheckpointDir(options, env.rank());
        train::CheckModelPlan(options, env.rank());
        train::CheckStrategy(options, env.rank());
        // Counting opens every file of this rank's shard: a file every rank finds wrong alike (a
        // CSV header without the feature's column) is an error of the parse phase, said once.
        const train::DataShard shard = train::ShardOf(options, env.rank());
        local_batches =
            pipeline::CountLocalTrainingBatches(options.train_input, shard.index, shard.count);
        options.tuning.threads = apps::ResolveThreads(config, env.local_size());
        options.tuning.local_ranks = env.local_size();
        options.tuning.cores = static_cast<int>(std::thread::hardware_concurrency());
        cpu::SetIntraOpThreads(options.tuning.threads);
        cpu::GemmTarget();         // a bad SHARDFLOW_CPU_TARGET is an error of the parse phase
        cpu::CurrentConvKernel();  // and a bad SHARDFLOW_CONV
        options.tuning.bound_cores = cpu::BoundCores();
        if (env.local_rank() == 0) {  // once per node
          const std::string w = apps::ThreadsOverBindingWarning(
              options.tuning.threads, options.tuning.bound_cores, "train.threads");
          if (!w.empty()) SF_LOG(Warn) << w;
        }
        // --check writes nothing: say where a run would write every key.
        PrintResolvedTable(schema, check ? "a run writes every key to OUTPUT/resolved.ini"
                                         : "resolved.ini has every key");
        if (env.is_chief()) std::printf("%s\n", train::DerivedValues(config, options).c_str());
      },
      [&](MpiEnvironment& env) {
        if (check) return train::DryRun(env, config, options);
        if (env.is_chief()) {
          if (config.overwrite) train::ClearPreviousRun(options);
          train::SetAsideUnfinishedRun(options);
          train::RemoveUnfinishedCheckpoints(options);
          std::filesystem::create_directories(config.output);
          schema.SaveResolved(config.output + "/resolved.ini");
        }
        return train::Run(env, config, options, local_batches, device.device);
      });
}
