// shardflow-train: synchronous data-parallel training, one process per rank.
//   mpirun -np N shardflow-train --config FILE [--section.key=value ...] [--output DIR] [--resume]
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/train/trainer.hpp"
#include "apps/train/trainer_options.hpp"
#include "core/cpu/gemm.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"
#include "io/pipeline/list_files.hpp"

namespace shardflow::train {
namespace {

// --resume without a checkpoint to resume from, or with one that does not fit the model or the
// optimizer, is a usage error found in the parse phase, where every rank hits it alike and one
// line says so (--resume=auto starts fresh when there is none). The newest usable checkpoint is
// loaded into a scratch model to check it; the strategy loads it again to resume.
void CheckResumable(const TrainerOptions& o) {
  if (!o.resume) return;
  const bool none =
      !std::filesystem::is_directory(o.checkpoint.dir) || ListCheckpoints(o.checkpoint).empty();
  if (none && o.resume_if_possible) return;
  if (!none) {
    Sequential<float> model(o.model_spec, o.input_shape, o.model);
    const std::unique_ptr<Optimizer> optimizer = MakeOptimizer(o.optimizer, model.arena().size());
    TrainingState state;
    if (!LoadLatestCheckpoint(o.checkpoint, model, optimizer.get(), &state).empty()) return;
    if (o.resume_if_possible) return;
  }
  throw Error(ErrorCode::kNotFound, "--resume: no checkpoint to resume from",
              {.file = o.checkpoint.dir,
               .hint = "--resume=auto starts fresh when there is none; without --resume the "
                       "run starts fresh"});
}

int Run(MpiEnvironment& env, apps::ExperimentConfig& config, TrainerOptions& options) {
  const bool chief = env.is_chief();
  if (chief) {
    std::filesystem::create_directories(config.output);
    SF_LOG(Info) << "batch: " << options.per_rank_batch << " per rank x " << env.size()
                 << " ranks = " << options.per_rank_batch * env.size() << " global ("
                 << config.batch_semantics << " semantics); intra-op threads "
                 << options.tuning.threads << " per rank";
  }
  TrainerInputs inputs;
  inputs.train = [&] { return pipeline::BuildInputPipeline(config.data, env.rank(), env.size()); };
  inputs.local_batches = [&] {
    return pipeline::CountLocalBatches(config.data, env.rank(), env.size());
  };
  if (!config.eval.data.files.empty()) {
    inputs.eval = [&] { return pipeline::BuildInputPipeline(config.eval, env.rank(), env.size()); };
  }
  const comm::Communicator job(comm::Group::kWorld, {.discover_topology = false});
  const TrainResult result = RunTraining(job, options, inputs);
  if (chief && result.already_complete) {
    std::printf("the run in %s is complete; nothing changed (raise train.epochs to go on)\n",
                config.output.c_str());
  } else if (chief) {
    std::ofstream(config.output + "/summary.json") << SummaryToJson(result.summary).dump(2) << "\n";
    std::fputs(FormatReport(result.summary).c_str(), stdout);
    std::printf("outputs in %s (resolved.ini, metrics.jsonl, summary.json, checkpoints/)\n",
                config.output.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace shardflow::train

int main(int argc, char** argv) {
  using namespace shardflow;
  apps::ExperimentConfig config;
  train::TrainerOptions options;
  ConfigSchema schema;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment& env) {
        apps::RegisterExperimentConfig(schema, &config);
        AppSpec app("shardflow-train",
                    "synchronous data-parallel training; run one process per rank under mpirun "
                    "or srun");
        app.Flag("output", &config.output, "DIR",
                 "outputs: resolved.ini, metrics.jsonl, summary.json, checkpoints/, traces")
            .OptionalValue("resume", &config.resume, "latest", {"latest", "auto"},
                           "continue from the newest checkpoint (an error when there is none); "
                           "=auto: continue if there is one, else start fresh")
            .Switch("no-progress", &config.no_progress, "no progress bar")
            .RequireConfig(true);
        ParseCommandLine(argc, argv, schema, app);
        options = train::MakeTrainerOptions(&config, env.size(), schema.ResolvedIni());
        // Input patterns that match nothing are a usage error: reported here, once, rather
        // than by every rank's pipeline at once.
        train::CheckResumable(options);
        pipeline::CheckFilesMatch(config.data.data.files, "data.files");
        if (!config.eval.data.files.empty()) {
          pipeline::CheckFilesMatch(config.eval.data.files, "eval.files");
        }
        options.tuning.threads = apps::ResolveThreads(config, env.local_size());
        options.tuning.local_ranks = env.local_size();
        options.tuning.cores = static_cast<int>(std::thread::hardware_concurrency());
        cpu::SetIntraOpThreads(options.tuning.threads);
      },
      [&](MpiEnvironment& env) {
        if (env.is_chief()) {
          std::filesystem::create_directories(config.output);
          schema.SaveResolved(config.output + "/resolved.ini");
        }
        return train::Run(env, config, options);
      });
}
