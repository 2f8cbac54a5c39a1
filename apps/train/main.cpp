// shardflow-train: synchronous data-parallel training, one process per rank.
//   mpirun -np N shardflow-train --config FILE [--section.key=value ...] [--output DIR]
//       [--resume[=auto]] [--check] [--no-progress]
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <thread>

#include "apps/common/device_choice.hpp"
#include "apps/common/install_device.hpp"
#include "apps/common/stage_plan.hpp"
#include "apps/train/dynamic_shard.hpp"
#include "apps/train/memory_guard.hpp"
#include "apps/train/model_parallel.hpp"
#include "apps/train/ps_placement.hpp"
#include "apps/train/straggler_log.hpp"
#include "apps/train/train_device.hpp"
#include "apps/train/trainer.hpp"
#include "apps/train/trainer_options.hpp"
#include "comm/collectives.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"
#include "core/stop_signal.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/list_files.hpp"

// shardflow-train-cuda is this file linked with the CUDA backend (apps/train/CMakeLists.txt).
#if defined(SHARDFLOW_APP_CUDA)
constexpr bool kHasCudaBackend = true;
#else
constexpr bool kHasCudaBackend = false;
#endif

namespace shardflow::train {
namespace {

// Formats whose records can be found again by id (a file and a byte or row offset), which
// elastic resume needs: TFRecord, CSV, JSON lines and text by byte offset, HDF5 by row. A
// compressed file has no byte ranges: the resume then stops with an error naming the format.
bool ReadsRecordsById(const std::string& format) {
  return format == "tfrecord" || format == "hdf5" || format == "csv" || format == "jsonl" ||
         format == "text";
}

// Whether the checkpoint `info` (read from `path`) fits the model and optimizer of `o`:
// the same parameters by name and whole shape, whatever grid wrote it or will read it.
void CheckFits(const CheckpointInfo& info, const std::string& path, const TrainerOptions& o) {
  std::map<std::string, Shape> in_file(info.params.begin(), info.params.end());
  for (const LayerInfo& layer : DescribeLayers(o.model_spec, o.input_shape, o.model)) {
    for (const auto& [name, shape] : layer.params) {
      const auto it = in_file.find(name);
      if (it == in_file.end()) {
        throw Error(ErrorCode::kInvalidArgument,
                    "parameter " + name + " of the model is not in the checkpoint",
                    {.file = path, .hint = "resume with the model that wrote it"});
      }
      if (it->second != shape) {
        throw Error(ErrorCode::kInvalidArgument,
                    "parameter " + name + " has shape " + ShapeToString(shape) +
                        " in the model but " + ShapeToString(it->second) + " in the checkpoint",
                    {.file = path, .hint = "resume with the model that wrote it"});
      }
      in_file.erase(it);
    }
  }
  if (!in_file.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "parameter " + in_file.begin()->first + " of the checkpoint is not in the model",
                {.file = path, .hint = "resume with the model that wrote it"});
  }
  if (!info.optimizer.empty() && info.optimizer != o.optimizer.name) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "the checkpoint holds " + info.optimizer + " state, the run uses " + o.optimizer.name,
        {.file = path, .key = "train.optimizer"});
  }
}

// --resume without a checkpoint to resume from, or with one that does not fit the model or the
// optimizer, is a usage error found in the parse phase, where every rank hits it alike and one
// line says so (--resume=auto starts fresh when there is none). Only the newest readable file's
// metadata is read (no tensor data, no model built: it may not fit one rank); the strategy
// loads the checkpoint, each rank its part.
void CheckResumable(const TrainerOptions& o) {
  if (!o.resume) return;
  const bool none =
      !std::filesystem::is_directory(o.checkpoint.dir) || ListCheckpoints(o.checkpoint).empty();
  if (none && o.resume_if_possible) return;
  if (!none) {
    const std::vector<std::string> files = ListCheckpoints(o.checkpoint);
    for (auto it = files.rbegin(); it != files.rend(); ++it) {
      CheckpointInfo info;
      try {
        info = ReadCheckpointInfo(*it);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kDataLoss) continue;  // damaged: loading skips it too
        throw;
      }
      CheckFits(info, *it, o);
      if (!CheckSameRun(info.config_text, o.config_text, *it)) {
        SF_LOG0(Warn) << *it << " predates run identity hashes: not checked that it was written "
                      << "with this config's model and data";
      }
      return;
    }
    if (o.resume_if_possible) return;
  }
  throw Error(ErrorCode::kNotFound, "--resume: no checkpoint to resume from",
              {.file = o.checkpoint.dir,
               .hint = "--resume=auto starts fresh when there is none; without --resume the "
                       "run starts fresh"});
}

// A fresh run (no --resume) into an OUTPUT that holds another run's checkpoints or metrics would
// mix the two: same-step checkpoints overwritten, keep_last deleting the other's, a later
// --resume continuing the wrong one, metrics.jsonl interleaved. Refused unless --overwrite.
void CheckFreshOutput(const TrainerOptions& o, bool overwrite) {
  if (overwrite && o.resume) {
    throw Error(ErrorCode::kInvalidArgument, "--overwrite and --resume exclude each other",
                {.key = "--overwrite"});
  }
  if (o.resume || overwrite) return;
  const bool checkpoints =
      std::filesystem::is_directory(o.checkpoint.dir) && !ListCheckpoints(o.checkpoint).empty();
  const bool metrics = std::filesystem::exists(o.output_dir + "/metrics.jsonl");
  if (!checkpoints && !metrics) return;
  throw Error(ErrorCode::kInvalidArgument,
              std::string("the output already holds a run (") +
                  (checkpoints ? "checkpoints" : "metrics.jsonl") +
                  "); a fresh run would mix with it",
              {.file = checkpoints ? o.checkpoint.dir : o.output_dir,
               .hint = "--resume continues it, --overwrite clears it first, or choose another "
                       "--output"});
}

// --overwrite, on rank 0 before anything is written: the previous run's checkpoints,
// metrics.jsonl, summary.json and the TensorBoard events (tb/) go, logged (unfinished .tmp files go
// on every start).
void ClearPreviousRun(const TrainerOptions& o) {
  namespace fs = std::filesystem;
  int removed = 0;
  if (fs::is_directory(o.checkpoint.dir)) {
    for (const std::string& f : ListCheckpoints(o.checkpoint)) removed += fs::remove(f) ? 1 : 0;
  }
  const bool metrics = fs::remove(o.output_dir + "/metrics.jsonl");
  fs::remove(o.output_dir + "/summary.json");
  fs::remove_all(o.output_dir + "/tb");
  if (removed > 0 || metrics) {
    SF_LOG(Warn) << "--overwrite: removed " << removed << " checkpoints of the previous run from "
                 << o.checkpoint.dir << (metrics ? " and its metrics.jsonl" : "");
  }
}

// checkpoint.dir must be a folder this rank can create files in: found at start-up, not at the
// first checkpoint after all of training. Every rank checks (they share the folder or not);
// a probe file named by rank and pid is created and removed.
void CheckCheckpointDir(const TrainerOptions& o, int rank) {
  namespace fs = std::filesystem;
  const std::string& dir = o.checkpoint.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && !fs::is_directory(dir, ec)) ec = std::make_error_code(std::errc::not_a_directory);
  std::string what = "cannot create the checkpoint folder";
  if (!ec) {
    const std::string probe =
        dir + "/.write-test." + std::to_string(rank) + "." + std::to_string(::getpid());
    if (std::FILE* f = std::fopen(probe.c_str(), "w"); f != nullptr) {
      std::fclose(f);
      fs::remove(probe, ec);
      return;
    }
    ec = std::error_code(errno, std::generic_category());
    what = "cannot write in the checkpoint folder";
  }
  // An I/O error (exit 1) naming the errno, as every refused path is (README, exit codes).
  throw Error(ErrorCode::kIo,
              what + ": " + ec.message() + " (errno " + std::to_string(ec.value()) + ")",
              {.file = dir,
               .key = "checkpoint.dir",
               .hint = "set checkpoint.dir (or --output) to a writable folder"});
}

// Rank 0, before training: checkpoint files a killed writer left unfinished
// (NAME.h5.tmp.PID) are removed, logged. No writer of another run can be at work in the folder
// (a fresh run into a used OUTPUT is refused).
void RemoveUnfinishedCheckpoints(const TrainerOptions& o) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(o.checkpoint.dir)) return;
  std::vector<fs::path> unfinished;
  for (const fs::directory_entry& e : fs::directory_iterator(o.checkpoint.dir)) {
    if (e.path().filename().string().find(".h5.tmp.") != std::string::npos) {
      unfinished.push_back(e.path());
    }
  }
  for (const fs::path& p : unfinished) {
    fs::remove(p);
    SF_LOG(Warn) << "removed " << p.string() << ", a checkpoint its killed writer left unfinished";
  }
}

// A folder among the data files would be read as a damaged record file ("truncated record
// header", exit 3): a usage error naming it and the key instead (images read folders through
// data.root, not data.files).
void CheckNotFolders(const pipeline::InputSpec& spec, const std::string& key) {
  if (spec.data.format == "images") return;
  for (const std::string& f : pipeline::ListFiles(spec.data.files)) {
    if (std::filesystem::is_directory(f)) {
      throw Error(ErrorCode::kInvalidArgument, "a data file is a directory",
                  {.file = f,
                   .key = key,
                   .hint = "give the files in it, e.g. " + f + "/*." + spec.data.format});
    }
  }
}

// The inputs, in the parse phase: patterns that match nothing and folders among the files are
// usage errors reported here, once, rather than by every rank's pipeline at once; a label
// outside the model's classes will name its file and record (checked per example).
void CheckInputs(apps::ExperimentConfig* config, const TrainerOptions& o) {
  pipeline::CheckInputFilesMatch(config->data, "data.files");
  CheckNotFolders(config->data, "data.files");
  if (!config->eval.data.files.empty()) {
    pipeline::CheckFilesMatch(config->eval.data.files, "eval.files");
    CheckNotFolders(config->eval, "eval.files");
  }
  // An assembled input (data.assemble) must be what the model reads; its layout is logged.
  const std::string layout =
      apps::CheckAssembledInput(config->data, o.input_feature, o.input_shape);
  if (!layout.empty()) SF_LOG0(Info) << "[data] assembled input: " << layout;
  if (!config->eval.data.files.empty()) {
    apps::CheckAssembledInput(config->eval, o.input_feature, o.input_shape);
  }
  if (o.task == apps::Task::kClassify) {
    const Shape out = DescribeLayers(o.model_spec, o.input_shape, o.model).back().output_shape;
    config->data.check_example = apps::LabelRangeCheck(o.label_feature, out.back());
    config->eval.check_example = config->data.check_example;
  }
}

// The shard of the data this rank reads: its data-parallel replica's (every rank of a
// model-parallel replica reads the same batches).
struct DataShard {
  int index = 0;
  int count = 1;
};
DataShard ShardOf(const TrainerOptions& o, int rank) {
  if (o.strategy == "parameter_server") {  // the workers share the data; servers read none
    const PsRoles roles = RolesOf(o.model_parallel.grid.ranks(), o.ps_ranks, o.ps_servers);
    const int index = roles.worker_index(rank);
    return {.index = index < 0 ? 0 : index, .count = static_cast<int>(roles.workers.size())};
  }
  const apps::GridShape& grid = o.model_parallel.grid;
  return {.index = apps::PlaceOf(grid, rank).replica, .count = grid.replicas};
}

int Run(MpiEnvironment& env, apps::ExperimentConfig& config, TrainerOptions& options,
        int64_t local_batches, Device device) {
  const bool chief = env.is_chief();
  const DataShard shard = ShardOf(options, env.rank());
  if (chief) {
    std::filesystem::create_directories(config.output);
    const bool replicas = options.model_parallel.grid.model_parallel();
    const std::vector<int64_t> batches = ReplicaBatches(options, shard.count);
    SF_LOG(Info) << "batch: " << BatchText(batches)
                 << (replicas ? " per replica x " : " per rank x ") << shard.count
                 << (replicas ? " replicas = " : " ranks = ")
                 << std::accumulate(batches.begin(), batches.end(), int64_t{0}) << " global ("
                 << config.batch_semantics << " semantics"
                 << (options.replica_batches.empty()
                         ? ""
                         : "; it does not divide: each step weighs the gradients by rows")
                 << "); intra-op threads " << options.tuning.threads << " per rank, kernels "
                 << cpu::GemmTarget() << ", convolutions "
                 << cpu::ConvKernelName(cpu::CurrentConvKernel())
                 << (cpu::OneDnnBuilt() ? "" : " (built without oneDNN)")
                 << " (SHARDFLOW_CONV: auto takes Winograd for 5x5 stride-1 'same' convolutions, "
                    "then oneDNN's direct kernels)";
  }
  options.final_params = false;
  TrainerInputs inputs;
  inputs.train = [&config, shard] {
    return pipeline::BuildInputPipeline(config.data, shard.index, shard.count);
  };
  inputs.local_batches = [local_batches] { return local_batches; };
  inputs.shard_size = [&config, shard] {
    return ShardSizeOf(config.data, shard.index, shard.count);
  };
  if (ReadsRecordsById(config.data.data.format)) {  // elastic resume reads records by id
    config.data.data.row_ids = true;
    inputs.factories.regular = [&config](int rank, int world, int64_t batch,
                                         const std::vector<int64_t>& shard_weights) {
      pipeline::InputSpec spec = config.data;
      spec.data.batch_size = batch;
      spec.data.shard_weights = shard_weights;
      return pipeline::BuildInputPipeline(spec, rank, world);
    };
    inputs.factories.records = [&config](std::shared_ptr<const std::vector<int64_t>> ids,
                                         int64_t batch) {
      pipeline::InputSpec spec = config.data;
      spec.data.batch_size = batch;
      spec.data.only_records = std::move(ids);
      return pipeline::BuildInputPipeline(spec, 0, 1);
    };
    inputs.factories.all_ids = [&config] { return pipeline::AllRecordIds(config.data); };
    inputs.factories.shuffle_seed =
        config.data.data.shuffle_buffer > 0 ? static_cast<int64_t>(config.data.data.seed) : -1;
    inputs.factories.provided = [&config](std::function<std::optional<int64_t>()> next,
                                          int64_t batch) {
      pipeline::InputSpec spec = config.data;
      spec.data.batch_size = batch;
      spec.data.epochs = 1;
      // A batch read ahead is a batch claimed: a few, so a fast worker does not claim what a
      // slow one could have trained (an autotuned depth grows while the claims are slow).
      spec.data.prefetch = 2;
      spec.data.record_provider = std::move(next);
      return pipeline::BuildInputPipeline(spec, 0, 1);
    };
    if (options.dynamic_sharding && config.data.on_corrupt == "skip") {
      throw Error(ErrorCode::kInvalidArgument,
                  "dist.sharding = dynamic trains every claimed batch whole, so a damaged record "
                  "cannot be skipped (data.on_corrupt = skip)",
                  {.key = "dist.sharding", .hint = "data.on_corrupt = fail, or static sharding"});
    }
  } else if (options.dynamic_sharding) {
    throw Error(ErrorCode::kInvalidArgument,
                "dist.sharding = dynamic reads records by their offsets, which needs "
                "data.format = tfrecord, not " +
                    config.data.data.format,
                {.key = "dist.sharding", .hint = "convert the data with shardflow-convert"});
  }
  if (!config.eval.data.files.empty()) {
    inputs.eval = [&config, shard] {
      return pipeline::BuildInputPipeline(config.eval, shard.index, shard.count);
    };
  }
  const comm::Communicator job(comm::Group::kWorld, {.discover_topology = false});
  InstallStopHandlers();
  const TrainResult result = RunTraining(job, options, inputs);
  // summary.json, with the device the layers ran on and the assembled input's layout (which
  // slice is which column) when any.
  auto summary_json = [&] {
    auto json = SummaryToJson(result.summary);
    json["device"] = DeviceName(device);
    if (const std::string layout = pipeline::AssembledLayout(config.data); !layout.empty()) {
      json["input_layout"] = layout;
    }
    return json;
  };
  if (result.stopped) {
    if (chief) {
      std::ofstream(config.output + "/summary.json") << summary_json().dump(2) << "\n";
      std::printf(
          "stopped by %s after step %lld: checkpoint written in %s; the job exits %d, and "
          "--resume continues it\n",
          result.stop_signal != 0 ? StopSignalName(result.stop_signal) : "a peer's stop signal",
          static_cast<long long>(result.summary.steps), options.checkpoint.dir.c_str(),
          kExitPreempted);
      std::fflush(stdout);
    }
    return kExitPreempted;
  }
  if (chief && result.already_complete) {
    std::printf("the run in %s is complete; nothing changed (raise train.epochs to go on)\n",
                config.output.c_str());
  } else if (chief) {
    std::ofstream(config.output + "/summary.json") << summary_json().dump(2) << "\n";
    std::fputs(FormatReport(result.summary).c_str(), stdout);
    std::printf("outputs in %s (resolved.ini, metrics.jsonl, summary.json, checkpoints/)\n",
                config.output.c_str());
    std::fflush(stdout);
  }
  return 0;
}

// --check: what a run would do, from every rank's counts, printed by rank 0; nothing trained or
// written. Memory is the model's share per rank: parameters, gradients and optimizer slots in
// float32, plus one input batch (activations come on top and depend on the layers).
int DryRun(MpiEnvironment& env, const apps::ExperimentConfig& config, const TrainerOptions& o) {
  comm::Communicator job(comm::Group::kWorld, {.discover_topology = false});
  const DataShard shard = ShardOf(o, env.rank());
  const int64_t records = pipeline::CountLocalRecords(config.data, shard.index, shard.count);
  const int64_t batches = pipeline::CountLocalBatches(config.data, shard.index, shard.count);
  const std::vector<int64_t> all_records = comm::AllgatherInt64(job, records);
  const std::vector<int64_t> all_batches = comm::AllgatherInt64(job, batches);
  const std::vector<int64_t> local_ranks = comm::AllgatherInt64(job, env.local_rank());
  if (!env.is_chief()) return 0;
  const auto train_files = pipeline::ListFiles(config.data.data.files);
  std::printf("check: %zu training files (%s ... %s)", train_files.size(),
              train_files.front().c_str(), train_files.back().c_str());
  if (!config.eval.data.files.empty()) {
    std::printf(", %zu evaluation files", pipeline::ListFiles(config.eval.data.files).size());
  }
  std::printf("\ncheck: rank  local rank  threads  records  batches\n");
  for (int r = 0; r < env.size(); ++r) {
    std::printf("check: %4d  %10lld  %7d  %7lld  %7lld\n", r,
                static_cast<long long>(local_ranks[r]), o.tuning.threads,
                static_cast<long long>(all_records[r]), static_cast<long long>(all_batches[r]));
  }
  if (o.dynamic_sharding) {  // the workers claim every record's batch as they go
    const ClaimPlan p =
        ClaimPlan::Make(static_cast<int64_t>(pipeline::AllRecordIds(config.data).size()),
                        o.per_rank_batch, env.size() - o.ps_ranks);
    const int64_t planned = p.steps_per_epoch * o.epochs;
    std::printf(
        "check: dynamic sharding: %lld records an epoch in %lld batches of %lld, claimed by %lld "
        "workers as they go: %lld nominal steps per epoch x %lld epochs = %lld steps\n",
        static_cast<long long>(p.records), static_cast<long long>(p.per_epoch),
        static_cast<long long>(p.batch), static_cast<long long>(p.workers),
        static_cast<long long>(p.steps_per_epoch), static_cast<long long>(o.epochs),
        static_cast<long long>(o.max_steps > 0 ? std::min(planned, o.max_steps) : planned));
  } else {
    const int64_t per_epoch = *std::min_element(all_batches.begin(), all_batches.end());
    const int64_t planned = per_epoch * o.epochs;
    const int64_t steps = o.max_steps > 0 ? std::min(planned, o.max_steps) : planned;
    std::printf(
        "check: %lld steps per epoch (the fewest batches of any rank) x %lld epochs = %lld "
        "steps\n",
        static_cast<long long>(per_epoch), static_cast<long long>(o.epochs),
        static_cast<long long>(steps));
  }
  int64_t params = 0;  // counted without building the model (it may not fit one rank)
  for (const LayerInfo& layer : DescribeLayers(o.model_spec, o.input_shape, o.model)) {
    params += layer.parameters;
  }
  int64_t share = params;  // the largest rank's parameters
  std::string holder;
  if (o.model_parallel.grid.model_parallel()) {
    share = 0;
    for (int r = 0; r < env.size(); ++r) {
      const apps::RankPlan plan =
          apps::PlanRank(o, o.model_parallel.grid, o.model_parallel.stage_boundaries, r);
      if (plan.parameters > share) {
        share = plan.parameters;
        holder = " (rank " + std::to_string(r) + ": " + plan.holder + ")";
      }
    }
    std::printf("check: grid %s\n", o.model_parallel.grid.ToString().c_str());
  }
  const int64_t sample = NumElements(o.input_shape);
  const double mib =
      static_cast<double>(ModelStateBytes(share, o.optimizer) + 4 * o.per_rank_batch * sample) /
      (1024.0 * 1024.0);
  std::printf(
      "check: model %lld parameters; per rank about %.1f MiB for parameters, gradients, "
      "optimizer state and one batch (activations extra)%s\n",
      static_cast<long long>(params), mib, holder.c_str());
  std::printf("check: ok, nothing trained or written\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace shardflow::train

int main(int argc, char** argv) {
  using namespace shardflow;
  apps::ExperimentConfig config;
  train::TrainerOptions options;
  ConfigSchema schema;
  bool check = false;
  int64_t local_batches = 0;
  apps::DeviceChoice device;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment& env) {
        apps::RegisterExperimentConfig(schema, &config);
        train::DisownTrainerSetKeys(schema);
        AppSpec app("shardflow-train",
                    "synchronous data-parallel training; run one process per rank under mpirun "
                    "or srun");
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
        options = train::MakeTrainerOptions(&config, env.size(), schema.ResolvedIni());
        if (options.strategy == "parameter_server") {
          options.ps_servers = train::PlaceParameterServers(env.size(), options.ps_ranks,
                                                            config.ps_placement, env.node_of_rank())
                                   .servers;
          options.ps_transport = train::ResolvePsTransport(config.ps_transport, env.node_of_rank());
        }
        // Each rank alone, before the costly checks: a rank without the GPU asked for stops the
        // job with its own line (no collective in the parse phase; RunMain agrees on failures).
        device = train::UseTrainingDevice(env, config, kHasCudaBackend, options);
        train::SetReplicaBatch(train::ShardOf(options, env.rank()).index, &config, &options);
        train::CheckInputs(&config, options);
        train::CheckFreshOutput(options, config.overwrite);
        train::CheckResumable(options);
        if (!check) train::CheckCheckpointDir(options, env.rank());
        train::CheckModelPlan(options, env.rank());
        // Counting opens every file of this rank's shard: a file every rank finds wrong alike (a
        // CSV header without the feature's column) is an error of the parse phase, said once.
        const train::DataShard shard = train::ShardOf(options, env.rank());
        local_batches = pipeline::CountLocalTrainingBatches(config.data, shard.index, shard.count);
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
        PrintResolvedTable(schema);
      },
      [&](MpiEnvironment& env) {
        if (check) return train::DryRun(env, config, options);
        if (env.is_chief()) {
          if (config.overwrite) train::ClearPreviousRun(options);
          train::RemoveUnfinishedCheckpoints(options);
          std::filesystem::create_directories(config.output);
          schema.SaveResolved(config.output + "/resolved.ini");
        }
        return train::Run(env, config, options, local_batches, device.device);
      });
}
