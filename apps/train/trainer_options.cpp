#include "apps/train/trainer_options.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "apps/train/strategy_unit.hpp"
#include "core/hash.hpp"

namespace shardflow::train {

namespace {

// The keys DisownTrainerSetKeys hides, and what sets each instead.
const std::vector<std::pair<std::string, std::string>>& TrainerSetKeys() {
  static const std::vector<std::pair<std::string, std::string>> keys = {
      {"data.batch_size", "train.batch_size (with train.batch_semantics) sets the batch"},
      {"data.epochs", "train.epochs sets the passes"},
      {"eval.batch_size",
       "evaluation batches are 4x the batch per rank, at most 256 (and at least the batch)"},
      {"eval.epochs", "evaluation reads every record once"},
      {"eval.shuffle_buffer", "evaluation reads in order"},
      {"eval.drop_remainder", "evaluation covers every record"},
      {"eval.augmentations",
       "evaluation applies data.augmentations without the random ones (random_resized_crop "
       "becomes center_crop)"},
      {"eval.image_feature", "evaluation augments data.image_feature"},
      {"eval.fuse_decode_crop", "evaluation fuses the decode into its crop as data does"}};
  return keys;
}

constexpr const char* kIdentityLine = "# run identity: ";

// The values of the identity keys in a resolved config ("[section]" lines, then "key = value").
std::map<std::string, std::string> IdentityValues(const std::string& text) {
  const std::vector<std::string>& keys = RunIdentityKeys();
  std::map<std::string, std::string> values;
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const size_t eq = line.find(" =");
    if (eq == std::string::npos) continue;
    const std::string key = section + "." + line.substr(0, eq);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) continue;
    const size_t start = line.find_first_not_of(' ', eq + 2);
    values[key] = start == std::string::npos ? "" : line.substr(start);
  }
  return values;
}

// FNV-1a (64 bit) over "key=value\n" of every identity key, in RunIdentityKeys() order.
std::string IdentityHash(const std::map<std::string, std::string>& values) {
  uint64_t h = kFnv1a64Offset;
  for (const std::string& key : RunIdentityKeys()) {
    const auto it = values.find(key);
    h = Fnv1a64(key + "=" + (it == values.end() ? "" : it->second) + "\n", h);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

// Formats whose records can be found again by id (a file and a byte or row offset), which
// elastic resume needs: TFRecord, CSV, JSON lines and text by byte offset, HDF5 by row. A
// compressed file has no byte ranges: the resume then stops with an error naming the format.
bool ReadsRecordsById(const std::string& format) {
  return format == "tfrecord" || format == "hdf5" || format == "csv" || format == "jsonl" ||
         format == "text";
}

// The per-rank batch, and the input specs' batch sizes and passes.
int64_t SetBatchSizes(const apps::ExperimentConfig& c, int ranks, TrainerOptions* o) {
  int64_t per_rank = c.batch_size;
  if (c.batch_semantics == "global") {
    if (c.batch_size < ranks) {
      throw Error(ErrorCode::kInvalidArgument,
                  "global batch " + std::to_string(c.batch_size) + " is smaller than " +
                      std::to_string(ranks) + " replicas: some would have no row",
                  {.key = "train.batch_size", .hint = "at least one sample per replica"});
    }
    per_rank = c.batch_size / ranks;  // SetReplicaBatch: one more for some when uneven
  }
  o->train_input = c.data;
  o->train_input.data.batch_size = per_rank;
  o->train_input.data.epochs = 1;  // one pass; the trainer repeats after agreeing on steps
  o->train_input.data.row_ids = ReadsRecordsById(c.data.data.format);  // elastic resume
  o->eval_input = c.eval;
  // Larger than training's (no backward pass, no saved gradients), but bounded by it: a fixed
  // 256 took 12 GB a rank for ResNet-50 at 224x224 (killed for memory on a 24 GB machine,
  // where training at 8 a rank fits).
  o->eval_input.data.batch_size = std::max<int64_t>(per_rank, std::min<int64_t>(256, 4 * per_rank));
  o->eval_input.data.epochs = 1;
  o->eval_input.data.shuffle_buffer = 0;
  o->eval_input.data.drop_remainder = false;
  // Evaluation sees what training sees, without the randomness: the center crop for a
  // random-resized one, no flip (pipeline::EvaluationAugmentations).
  o->eval_input.data.augmentations = pipeline::EvaluationAugmentations(c.data.data.augmentations);
  o->eval_input.data.image_feature = c.data.data.image_feature;
  o->eval_input.data.fuse_decode_crop = c.data.data.fuse_decode_crop;
  return per_rank;
}

void SetModelAndOptimizer(const apps::ExperimentConfig& c, int ranks, TrainerOptions* o) {
  static_cast<apps::ModelSetup&>(*o) = apps::MakeModelSetup(c);
  o->optimizer = {.name = c.optimizer,
                  .momentum = c.momentum,
                  .nesterov = c.nesterov,
                  .beta1 = c.beta1,
                  .beta2 = c.beta2,
                  .weight_decay = c.weight_decay};
  const double scale = c.lr_scaling == "linear" ? ranks : 1.0;
  o->schedule = {.kind = c.schedule,
                 .base_lr = c.lr * scale,
                 .warmup_steps = c.warmup_steps,
                 .step_size = c.step_size,
                 .gamma = c.gamma,
                 .min_lr = c.min_lr};
  o->clip_norm = c.clip_norm;
  o->epochs = c.epochs;
  o->max_steps = c.max_steps;
  o->max_memory_mb = c.max_memory_mb;
  o->log_every_steps = c.log_every;
  o->nonfinite = {.action = ParseOnNonfinite(c.on_nonfinite),
                  .max_skipped_steps = c.max_skipped_steps};
  o->early_stopping = ParseEarlyStopping(c.early_stopping, o->task == apps::Task::kClassify,
                                         !c.eval.data.files.empty());
}

void SetDistribution(const apps::ExperimentConfig& c, TrainerOptions* o) {
  const std::string algorithm = c.allreduce == "recursive_doubling" ? "rd" : c.allreduce;
  o->allreduce = {.algorithm = comm::ParseAlgorithm(algorithm),
                  .mode = comm::ReduceMode::kAverage,
                  .wire = c.wire == "bf16"   ? comm::WireFormat::kBFloat16
                          : c.wire == "fp16" ? comm::WireFormat::kFloat16
                                             : comm::WireFormat::kFloat32};
  o->bucket_mb = c.bucket_mb;
  o->overlap = c.overlap;
  o->device_allreduce = c.device_allreduce;
  o->device_prefetch = c.device_prefetch;
  o->peak_probe = c.peak_probe;
  o->watchdog_seconds = c.watchdog_seconds;
}

void SetOutputs(const apps::ExperimentConfig& c, const std::string& config_text,
                TrainerOptions* o) {
  o->output_dir = c.output;
  o->checkpoint.dir = c.checkpoint_dir.empty() ? c.output + "/checkpoints" : c.checkpoint_dir;
  o->checkpoint.keep_last = c.keep_last;
  o->checkpoint_every_steps = c.checkpoint_every_steps;
  o->checkpoint_every_epochs = c.checkpoint_every_epochs;
  if (c.checkpoint_every_minutes > 0 && c.checkpoint_every_seconds > 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "checkpoint.every_minutes and checkpoint.every_seconds are both set",
                {.key = "checkpoint.every_seconds", .hint = "set one of the two"});
  }
  o->checkpoint_every_seconds =
      c.checkpoint_every_seconds > 0 ? c.checkpoint_every_seconds : 60 * c.checkpoint_every_minutes;
  o->resume = !c.resume.empty();
  o->resume_if_possible = c.resume == "auto";
  o->warm_start = c.warm_start;
  if (o->resume && !o->warm_start.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--resume and a warm start exclude each other",
                {.key = "checkpoint.warm_start"});
  }
  o->config_text = WithRunIdentity(config_text);
  o->progress = !c.no_progress;
  o->trace = c.trace;
  o->tensorboard = c.tensorboard;
  o->histogram_every = c.histogram_every;
  o->stall = {.factor = c.stall_factor, .min_seconds = c.stall_min_seconds};
}

}  // namespace

// The grid, and the pipeline's micro-batches and schedule.
void SetModelParallel(const apps::ExperimentConfig& c, int ranks, TrainerOptions* o) {
  ModelParallelOptions& mp = o->model_parallel;
  mp.grid = apps::MakeGridShape(ranks, c.pipeline_stages, c.tensor_parallel);
  mp.stage_boundaries.assign(c.stage_boundaries.begin(), c.stage_boundaries.end());
  mp.schedule = apps::ParsePipelineSchedule(c.pipeline_schedule);
  const int stages = mp.grid.stages;
  if (!mp.stage_boundaries.empty() && stages == 1) {
    throw Error(ErrorCode::kInvalidArgument, "stage boundaries given for a single stage",
                {.key = "dist.stage_boundaries", .hint = "set dist.pipeline_stages"});
  }
  mp.micro_batches = c.micro_batches > 0 ? static_cast<int>(c.micro_batches)
                     : stages > 1        ? 2 * stages
                                         : 1;
  if (mp.schedule == PipelineSchedule::k1F1B && stages > 1 && mp.micro_batches < stages) {
    throw Error(ErrorCode::kInvalidArgument,
                "1f1b needs at least as many micro-batches as stages: micro_batches " +
                    std::to_string(mp.micro_batches) + " < pipeline_stages " +
                    std::to_string(stages),
                {.key = "dist.micro_batches", .hint = "raise micro_batches or use gpipe"});
  }
}

// dist.sharding = dynamic needs a strategy whose ranks step independently.
void CheckDynamicSharding(const StrategyUnit& unit) {
  if (unit.dynamic_sharding) return;
  std::string able;
  for (const std::string& name : StrategyNames()) {
    if (FindStrategyUnit(name).dynamic_sharding) able += (able.empty() ? "" : " or ") + name;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "dist.sharding = dynamic is for dist.strategy = " + able + ", not " + unit.name +
                  " (synchronous ranks take equal steps)",
              {.key = "dist.sharding"});
}

TrainerOptions MakeTrainerOptions(const apps::ExperimentConfig& config, const ConfigSchema& schema,
                                  const StrategySchema& strategies, const JobShape& job,
                                  const std::string& config_text) {
  const apps::ExperimentConfig* c = &config;
  TrainerOptions o;
  SetModelParallel(*c, job.ranks, &o);
  const StrategyUnit& unit = ResolveStrategyUnit(schema, strategies, *c);
  StrategyConfig sc{.config = *c, .job = job};
  for (const auto& [name, keys] : strategies.added) {
    if (name == unit.name) sc.keys = keys.get();
  }
  o.strategy = unit.name;
  o.dynamic_sharding = c->sharding == "dynamic";
  if (o.dynamic_sharding) CheckDynamicSharding(unit);
  if (o.dynamic_sharding && !c->early_stopping.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "train.early_stopping is not supported with dist.sharding = dynamic",
                {.key = "train.early_stopping", .hint = "static sharding, or no early stopping"});
  }
  // Batch sizes and learning-rate scaling count data replicas (the unit says how many: every
  // rank of a model-parallel replica works on the same samples, parameter servers on none).
  const int replicas = unit.replicas(sc);
  o.per_rank_batch = SetBatchSizes(*c, replicas, &o);
  o.global_batch = c->batch_semantics == "global";
  o.lr_scaled_by_ranks = c->lr_scaling == "linear";
  SetModelAndOptimizer(*c, replicas, &o);
  SetDistribution(*c, &o);
  if (unit.resolve) unit.resolve(sc, &o);
  if (o.global_batch && c->batch_size % replicas != 0) {
    if (o.dynamic_sharding) {
      throw Error(ErrorCode::kInvalidArgument,
                  "global batch " + std::to_string(c->batch_size) + " is not divisible by " +
                      std::to_string(replicas) +
                      " replicas: dynamically sharded workers claim equal batches",
                  {.key = "train.batch_size"});
    }
    o.replica_batches = SplitGlobalBatch(c->batch_size, replicas);
  }
  SetOutputs(*c, config_text, &o);
  o.tuning = {.parallel_calls = static_cast<int>(c->data.data.parallel_calls),
              .parallel_reads = static_cast<int>(c->data.data.parallel_reads),
              .prefetch = static_cast<int>(c->data.data.prefetch),
              .cache_enabled = !c->data.data.cache.empty(),
              .bucket_mb = c->bucket_mb,
              .overlap = c->overlap,
              .threads = 1,  // set by the caller, who knows the node's ranks
              .ranks = job.ranks,
              // BuildInputPipeline reads with one thread when parallel_reads is auto.
              .parallel_reads_used = c->data.data.parallel_reads == pipeline::kAutotune ? 1 : 0};
  o.plan = unit.plan(o, job);
  AssignComputeIndices(job.node_of_rank, &o.plan);
  o.final_params = false;  // the program writes checkpoints; TrainResult::params is for tests
  return o;
}

std::vector<int64_t> SplitGlobalBatch(int64_t global, int replicas) {
  std::vector<int64_t> batches(static_cast<size_t>(replicas), global / replicas);
  for (int64_t r = 0; r < global % replicas; ++r) ++batches[static_cast<size_t>(r)];
  return batches;
}

void SetReplicaBatch(int index, TrainerOptions* o) {
  if (o->replica_batches.empty()) return;
  o->per_rank_batch = o->replica_batches.at(static_cast<size_t>(index));
  o->train_input.data.batch_size = o->per_rank_batch;
  o->train_input.data.shard_weights = o->replica_batches;
}

std::string DerivedValues(const apps::ExperimentConfig& c, const TrainerOptions& o) {
  const int replicas = o.plan.shards;
  const std::vector<int64_t> batches = ReplicaBatches(o, replicas);
  int64_t global = 0;
  for (int64_t b : batches) global += b;
  std::ostringstream out;
  out << "derived: batch " << BatchText(batches) << " per data replica x " << replicas << " = "
      << global << " global (train.batch_semantics = " << c.batch_semantics << "); learning rate "
      << o.schedule.base_lr;
  if (o.lr_scaled_by_ranks) {
    out << " (train.lr " << c.lr << " x " << replicas << " replicas, train.lr_scaling = linear)";
  }
  if (o.schedule.warmup_steps > 0) out << " after " << o.schedule.warmup_steps << " warm-up steps";
  return out.str();
}

void DisownTrainerSetKeys(ConfigSchema& schema) {
  for (const auto& [key, instead] : TrainerSetKeys()) schema.Disown(key);
}

void RefuseTrainerSetKeys(const ConfigSchema& schema) {
  for (const auto& [key, instead] : TrainerSetKeys()) {
    const ConfigSource source = schema.SourceOf(key);
    if (source.kind == ConfigSource::Kind::kDefault) continue;
    throw Error(ErrorCode::kInvalidArgument,
                key + " (" + source.ToString() + ") has no effect in shardflow-train: " + instead,
                {.key = key, .hint = "remove it"});
  }
}

const std::vector<std::string>& RunIdentityKeys() {
  static const std::vector<std::string> keys = {
      "model.spec",          "model.input_shape",   "model.task",        "model.input_feature",
      "model.label_feature", "model.input_scale",   "model.init",        "model.seed",
      "data.files",          "data.format",         "data.features",     "data.shard_policy",
      "data.shuffle_files",  "data.shuffle_buffer", "data.cycle_length", "data.seed",
      "data.augmentations",  "data.image_feature",  "train.batch_size",  "train.batch_semantics"};
  return keys;
}

std::string WithRunIdentity(const std::string& config_text) {
  std::string text = config_text;
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text + kIdentityLine + IdentityHash(IdentityValues(config_text)) + "\n";
}

bool CheckSameRun(const std::string& stored_text, const std::string& current_text,
                  const std::string& path) {
  const size_t at = stored_text.rfind(kIdentityLine);
  if (at == std::string::npos) return false;
  const size_t from = at + std::string(kIdentityLine).size();
  const std::string stored_hash = stored_text.substr(from, stored_text.find('\n', from) - from);
  const std::map<std::string, std::string> now = IdentityValues(current_text);
  const std::string current_hash = IdentityHash(now);
  if (stored_hash == current_hash) return true;
  const std::map<std::string, std::string> then = IdentityValues(stored_text);
  std::string differences;
  for (const std::string& key : RunIdentityKeys()) {
    const auto a = then.find(key), b = now.find(key);
    const std::string old_value = a == then.end() ? "(unset)" : "'" + a->second + "'";
    const std::string new_value = b == now.end() ? "(unset)" : "'" + b->second + "'";
    if (old_value == new_value) continue;
    differences += (differences.empty() ? "" : "; ") + key + " " + old_value + " there, " +
                   new_value + " here";
  }
  throw Error(ErrorCode::kInvalidArgument,
              "the checkpoint belongs to another run (config hash " + stored_hash + " there, " +
                  current_hash + " here" + (differences.empty() ? "" : ": " + differences) + ")",
              {.file = path,
               .hint = "resume with the config that wrote it, or train afresh into another "
                       "--output (or --overwrite)"});
}

}  // namespace shardflow::train
