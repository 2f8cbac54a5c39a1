#include "apps/train/run.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "apps/common/stage_plan.hpp"
#include "apps/train/dynamic_shard.hpp"
#include "apps/train/memory_guard.hpp"
#include "apps/train/straggler_log.hpp"
#include "apps/train/strategy_unit.hpp"
#include "apps/train/trainer_options.hpp"
#include "comm/collectives.hpp"
#include "core/cpu/gemm.hpp"
#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/logging.hpp"
#include "core/stop_signal.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/list_files.hpp"

namespace shardflow::train {

// Every rank of a model-parallel replica reads the replica's shard; a rank that reads none (a
// parameter server) gets shard 0 of the count, which it never opens for training.
DataShard ShardOf(const TrainerOptions& o, int rank) {
  const JobPlan plan = PlanOf(o, o.model_parallel.grid.ranks());
  const RankRole& role = plan.ranks.at(static_cast<size_t>(rank));
  return {.index = role.shard < 0 ? 0 : role.shard, .count = plan.shards};
}

int Run(MpiEnvironment& env, const apps::ExperimentConfig& config, const TrainerOptions& options,
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
  TrainerInputs inputs;
  inputs.train = [&options, shard] {
    return pipeline::BuildInputPipeline(options.train_input, shard.index, shard.count);
  };
  inputs.local_batches = [local_batches] { return local_batches; };
  inputs.shard_size = [&options, shard] {
    return ShardSizeOf(options.train_input, shard.index, shard.count);
  };
  if (options.train_input.data.row_ids) {  // elastic resume reads records by id
    inputs.factories.regular = [&options](int rank, int world, int64_t batch,
                                          const std::vector<int64_t>& shard_weights) {
      pipeline::InputSpec spec = options.train_input;
      spec.data.batch_size = batch;
      spec.data.shard_weights = shard_weights;
      return pipeline::BuildInputPipeline(spec, rank, world);
    };
    inputs.factories.records = [&options](std::shared_ptr<const std::vector<int64_t>> ids,
                                          int64_t batch) {
      pipeline::InputSpec spec = options.train_input;
      spec.data.batch_size = batch;
      spec.data.only_records = std::move(ids);
      return pipeline::BuildInputPipeline(spec, 0, 1);
    };
    inputs.factories.all_ids = [&options] { return pipeline::AllRecordIds(options.train_input); };
    inputs.factories.shuffle_seed = options.train_input.data.shuffle_buffer > 0
                                        ? static_cast<int64_t>(options.train_input.data.seed)
                                        : -1;
    inputs.factories.provided = [&options](std::function<std::optional<int64_t>()> next,
                                           int64_t batch) {
      pipeline::InputSpec spec = options.train_input;
      spec.data.batch_size = batch;
      spec.data.epochs = 1;
      // A batch read ahead is a batch claimed: a few, so a fast worker does not claim what a
      // slow one could have trained (an autotuned depth grows while the claims are slow).
      spec.data.prefetch = 2;
      spec.data.record_provider = std::move(next);
      return pipeline::BuildInputPipeline(spec, 0, 1);
    };
    if (options.dynamic_sharding && options.train_input.on_corrupt == "skip") {
      throw Error(ErrorCode::kInvalidArgument,
                  "dist.sharding = dynamic trains every claimed batch whole, so a damaged record "
                  "cannot be skipped (data.on_corrupt = skip)",
                  {.key = "dist.sharding", .hint = "data.on_corrupt = fail, or static sharding"});
    }
  } else if (options.dynamic_sharding) {
    throw Error(ErrorCode::kInvalidArgument,
                "dist.sharding = dynamic reads records by their offsets, which needs "
                "data.format = tfrecord, not " +
                    options.train_input.data.format,
                {.key = "dist.sharding", .hint = "convert the data with shardflow-convert"});
  }
  if (!options.eval_input.data.files.empty()) {
    inputs.eval = [&options, shard] {
      return pipeline::BuildInputPipeline(options.eval_input, shard.index, shard.count);
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
    if (const std::string layout = pipeline::AssembledLayout(options.train_input);
        !layout.empty()) {
      json["input_layout"] = layout;
    }
    return json;
  };
  if (result.stopped) {
    const int status = StopExitStatus(result.stop_signal);
    if (chief) {
      std::ofstream(config.output + "/summary.json") << summary_json().dump(2) << "\n";
      std::printf(
          "stopped by %s after step %lld: checkpoint written in %s; the job exits %d, and "
          "--resume continues it\n",
          result.stop_signal != 0 ? StopSignalName(result.stop_signal) : "a peer's stop signal",
          static_cast<long long>(result.summary.steps), options.checkpoint.dir.c_str(), status);
      std::fflush(stdout);
    }
    return status;
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
  const int64_t records = pipeline::CountLocalRecords(o.train_input, shard.index, shard.count);
  const int64_t batches = pipeline::CountLocalBatches(o.train_input, shard.index, shard.count);
  const std::vector<int64_t> all_records = comm::AllgatherInt64(job, records);
  const std::vector<int64_t> all_batches = comm::AllgatherInt64(job, batches);
  const std::vector<int64_t> local_ranks = comm::AllgatherInt64(job, env.local_rank());
  if (!env.is_chief()) return 0;
  const auto train_files = pipeline::ListFiles(o.train_input.data.files);
  std::printf("check: %zu training files (%s ... %s)", train_files.size(),
              train_files.front().c_str(), train_files.back().c_str());
  if (!o.eval_input.data.files.empty()) {
    std::printf(", %zu evaluation files", pipeline::ListFiles(o.eval_input.data.files).size());
  }
  std::printf("\ncheck: rank  local rank  threads  records  batches  role (%s)\n",
              o.strategy.c_str());
  for (int r = 0; r < env.size(); ++r) {
    const RankRole& role = o.plan.ranks.at(static_cast<size_t>(r));
    std::printf("check: %4d  %10lld  %7d  %7lld  %7lld  %s%s%s\n", r,
                static_cast<long long>(local_ranks[r]), o.tuning.threads,
                static_cast<long long>(all_records[r]), static_cast<long long>(all_batches[r]),
                role.role.c_str(), role.takes_gpu ? "" : ", no GPU",
                role.writes_checkpoints ? ", writes checkpoints" : "");
  }
  if (o.dynamic_sharding) {  // the workers claim every record's batch as they go
    const ClaimPlan p =
        ClaimPlan::Make(static_cast<int64_t>(pipeline::AllRecordIds(o.train_input).size()),
                        o.per_rank_batch, o.plan.shards);
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
  std::printf("check: %s\n", DerivedValues(config, o).c_str());
  std::printf("check: ok, nothing trained or written\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace shardflow::train
