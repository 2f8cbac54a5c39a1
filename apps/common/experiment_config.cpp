#include "apps/common/experiment_config.hpp"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/cpu/gemm.hpp"
#include "core/environment.hpp"
#include "core/logging.hpp"

namespace shardflow::apps {

namespace {

void RegisterModelSection(ConfigSchema& s, ExperimentConfig* c) {
  s.DescribeSection("model", "the network");
  s.Add("model", "spec", &c->model,
        "a preset (linear, mlp, cnn, resnet, lstm_autoencoder) or a layer list such as "
        "'conv:32:5x5:same, relu, maxpool:2, flatten, dense:10'")
      .NonEmpty();
  s.Add("model", "input_shape", &c->input_shape, "shape of one input sample, e.g. 28,28,1")
      .NonEmpty();
  s.AddChoice("model", "task", &c->task, {"classify", "reconstruct"},
              "classify: softmax cross-entropy on integer labels; reconstruct: MSE to the input");
  s.Add("model", "input_feature", &c->input_feature, "batch feature fed to the model").NonEmpty();
  s.Add("model", "label_feature", &c->label_feature, "batch feature holding integer labels");
  s.Add("model", "input_scale", &c->input_scale,
        "uint8 inputs are multiplied by this; float32 inputs are used as they are");
  s.Add("model", "seed", &c->seed, "initial weights and dropout masks (same on every rank)");
  s.AddChoice("model", "init", &c->init, {"he", "glorot"},
              "initialisation of dense and conv kernels");
}

void RegisterTrainSection(ConfigSchema& s, ExperimentConfig* c) {
  s.DescribeSection("train", "optimisation");
  s.Add("train", "epochs", &c->epochs, "passes over the training data").Positive();
  s.Add("train", "batch_size", &c->batch_size, "samples per step (see batch_semantics)").Positive();
  s.AddChoice("train", "batch_semantics", &c->batch_semantics, {"per_rank", "global"},
              "per_rank: every rank takes batch_size samples a step; global: batch_size is split "
              "over the ranks");
  s.AddChoice("train", "optimizer", &c->optimizer, {"sgd", "adam", "adamw", "adagrad"},
              "update rule (adagrad: CPU models)");
  s.Add("train", "lr", &c->lr, "base learning rate").Positive();
  s.Add("train", "momentum", &c->momentum, "sgd momentum (0: none)").InRange(0.0, 0.9999);
  s.Add("train", "nesterov", &c->nesterov, "sgd: Nesterov momentum");
  s.Add("train", "beta1", &c->beta1, "adam/adamw first-moment decay").InRange(0.0, 0.9999);
  s.Add("train", "beta2", &c->beta2, "adam/adamw second-moment decay").InRange(0.0, 0.99999);
  s.Add("train", "weight_decay", &c->weight_decay, "L2 (sgd, adam) or decoupled (adamw) decay")
      .NonNegative();
  s.AddChoice("train", "schedule", &c->schedule, {"constant", "step", "cosine"},
              "learning-rate schedule over steps");
  s.Add("train", "warmup_steps", &c->warmup_steps, "linear warm-up steps").NonNegative();
  s.Add("train", "step_size", &c->step_size, "step schedule: decay every N steps").Positive();
  s.Add("train", "gamma", &c->gamma, "step schedule: decay factor").Positive();
  s.Add("train", "min_lr", &c->min_lr, "cosine schedule: final learning rate").NonNegative();
  s.AddChoice("train", "lr_scaling", &c->lr_scaling, {"none", "linear"},
              "linear: multiply lr by the rank count (large global batches; use warmup_steps)");
  s.Add("train", "clip_norm", &c->clip_norm, "clip gradients to this global norm (0: off)")
      .NonNegative();
  s.Add("train", "threads", &c->threads,
        "intra-op threads per rank (0: SHARDFLOW_THREADS, else the cores the launcher bound "
        "this rank to, or the machine's cores / ranks on the node when unbound)")
      .NonNegative();
  s.Add("train", "max_steps", &c->max_steps,
        "stop after this many steps in all (0: no limit); the learning-rate schedule still "
        "spans train.epochs, so a stopped run resumes exactly")
      .NonNegative();
  s.Add("train", "max_memory_mb", &c->max_memory_mb,
        "per-rank cap on the model state (parameters, gradients, optimizer slots) in MiB, "
        "checked before anything is allocated (0: none)")
      .NonNegative();
  s.Add("train", "log_every", &c->log_every, "steps between metrics.jsonl lines").Positive();
  s.AddChoice("train", "on_nonfinite", &c->on_nonfinite, {"fail", "skip_step"},
              "a NaN/Inf loss or gradient: fail (exit 3 naming step, epoch, quantity and lr) or "
              "skip_step (drop that update on every rank, counted in the report)");
  s.Add("train", "max_skipped_steps", &c->max_skipped_steps,
        "skip_step: non-finite steps skipped in a row before the job fails")
      .NonNegative();
  s.Add("train", "early_stopping", &c->early_stopping,
        "METRIC:PATIENCE, METRIC eval_loss, eval_accuracy or eval_auc: stop once PATIENCE "
        "evaluations in "
        "a row have not improved on the best, whose checkpoint is kept as OUTPUT/best.h5 "
        "(Keras' EarlyStopping with ModelCheckpoint(save_best_only); '' : off)");
  s.AddChoice("train", "device", &c->device, {"cpu", "cuda", "auto"},
              "where the layers run: cpu; cuda (the local rank's GPU among the visible ones, "
              "in the *-cuda programs, any strategy; parameter servers stay on the CPU; without "
              "a usable GPU it stops saying why, exit 2); auto (cuda when the program can use a "
              "visible GPU, else cpu)");
  s.Add("train", "device_prefetch", &c->device_prefetch,
        "on a device: copy the next batch (already read ahead by data.prefetch) into pinned "
        "memory and onto the device while the current step computes (false: each batch is "
        "copied when its step starts)");
  s.AddChoice("train", "precision", &c->precision, {"fp32", "bf16", "auto"},
              "how matrix products compute: fp32; bf16 (mixed precision as Keras' mixed_bfloat16 "
              "and PyTorch's autocast: products of bf16-rounded inputs summed in float, on "
              "oneDNN's AMX or AVX512-BF16 kernels; weights, optimizer state, losses, gradients "
              "and checkpoints stay float; refused on a CPU with neither); auto: bf16 where the "
              "CPU has AMX (without it bf16 measured slower), else fp32, saying why");
  s.AddChoice("train", "peak_probe", &c->peak_probe, {"auto", "on", "off"},
              "measure the precision's GEMM rate on every rank at once when training ends "
              "(about 0.1 s) so the report and summary.json state the fraction of that peak the "
              "model's arithmetic reached; auto: when training took 10 s or more, on the CPU");
  s.Add("train", "tf32", &c->tf32,
        "on a GPU: TF32 tensor cores for float GEMMs (cuBLAS) and convolutions (cuDNN); faster, "
        "with a 10-bit mantissa in the products, so results no longer track the CPU's");
}

void RegisterDistAndCheckpointSections(ConfigSchema& s, ExperimentConfig* c) {
  s.DescribeSection("dist", "distribution over ranks");
  s.Add("dist", "strategy", &c->strategy,
        "how the ranks share the work: a strategy shardflow-train has registered "
        "(shardflow-train --help lists each with the keys it reads), or auto: the strategy "
        "that splits models for a grid with pipeline stages or tensor ways, else synchronous "
        "data parallelism")
      .NonEmpty();
  s.Add("dist", "ps_ranks", &c->ps_ranks,
        "parameter_server: server ranks; each holds a slice of the parameters balanced by "
        "bytes, and its optimizer state")
      .Positive();
  s.Add("dist", "ps_placement", &c->ps_placement,
        "parameter_server: which ranks serve: last (the last dist.ps_ranks ranks), per_node "
        "(the highest rank of each node, round-robin), or a list of ranks such as 3,7; rank 0 "
        "is always the chief worker");
  s.AddChoice("dist", "ps_transport", &c->ps_transport, {"auto", "p2p", "rma"},
              "parameter_server: how workers pull and push: p2p (messages, a server event "
              "loop), rma (one-sided MPI windows the server only scans), auto (rma when every "
              "rank is on one node with a core each, else p2p)");
  s.AddChoice("dist", "ps_tables", &c->ps_tables, {"sparse", "dense"},
              "parameter_server: where embedding-bag and wide tables live: sparse (rows split "
              "over the servers by id mod dist.ps_ranks; a worker pulls and pushes only the rows "
              "its batch names, the servers keep per-row optimizer state) or dense (whole "
              "tables in the servers' slices, pulled and pushed every step)");
  s.Add("dist", "max_staleness", &c->max_staleness,
        "parameter_server: how many steps a worker may run ahead of the slowest (0: "
        "synchronous, as data_parallel; -1: unbounded, fully asynchronous)");
  s.AddChoice("dist", "sharding", &c->sharding, {"static", "dynamic"},
              "parameter_server: static (each worker reads its own shard, data.shard_policy) "
              "or dynamic (workers claim the epoch's batches as they need them, so a slow "
              "worker takes fewer; asynchronous, tfrecord)");
  s.AddChoice("dist", "allreduce", &c->allreduce,
              {"auto", "ring", "recursive_doubling", "hierarchical", "mpi", "shm"},
              "all-reduce algorithm (auto picks by message size and topology; on one node "
              "that is shm, through shared memory)");
  s.Add("dist", "bucket_mb", &c->bucket_mb, "gradient bucket size in MiB").Positive();
  s.Add("dist", "overlap", &c->overlap, "reduce buckets while backprop runs");
  s.AddChoice("dist", "device_allreduce", &c->device_allreduce, {"auto", "nccl", "host"},
              "gradients of a model on a GPU: nccl (reduced on the GPUs, bucket by bucket, on a "
              "communication stream), host (staged through host memory for dist.allreduce), "
              "auto (nccl where the program has it)");
  s.AddChoice("dist", "wire", &c->wire, {"float32", "bf16", "fp16"},
              "all-reduce wire format (16-bit halves the bytes; sums stay float32; used by "
              "ring and hierarchical, while shm, rd and mpi always move float32)");
  s.Add("dist", "watchdog_seconds", &c->watchdog_seconds,
        "a collective not done within this ends the job, naming the ranks that did not join")
      .Positive();
  s.Add("dist", "pipeline_stages", &c->pipeline_stages,
        "S: the model's layers split into S pipeline stages on S ranks; ranks = data "
        "replicas x S x tensor_parallel")
      .Positive();
  s.Add("dist", "tensor_parallel", &c->tensor_parallel,
        "T: the layers a preset marks split over T ranks (dense column/row pairs, conv "
        "channels); one all-reduce per pair forward and backward")
      .Positive();
  s.Add("dist", "stage_boundaries", &c->stage_boundaries,
        "first layer index of stages 1..S-1, e.g. 3,6 (empty: balanced by FLOPs; the split "
        "is logged)");
  s.Add("dist", "micro_batches", &c->micro_batches,
        "micro-batches per step through the pipeline (0: 2 x pipeline_stages); the batch "
        "per replica is split into them and their gradients summed")
      .NonNegative();
  s.AddChoice("dist", "schedule", &c->pipeline_schedule, {"gpipe", "1f1b"},
              "pipeline schedule: gpipe (all forwards, then all backwards) or 1f1b (one "
              "forward, one backward: at most S micro-batches of activations in flight)");

  s.DescribeSection("checkpoint", "checkpoints (HDF5, written by rank 0)");
  s.Add("checkpoint", "dir", &c->checkpoint_dir, "folder ('' : OUTPUT/checkpoints)");
  s.Add("checkpoint", "every_steps", &c->checkpoint_every_steps, "0: off").NonNegative();
  s.Add("checkpoint", "every_epochs", &c->checkpoint_every_epochs,
        "a checkpoint at the end of every Nth epoch (0: off); the last step always has one")
      .NonNegative();
  s.Add("checkpoint", "every_minutes", &c->checkpoint_every_minutes, "0: off").NonNegative();
  s.Add("checkpoint", "every_seconds", &c->checkpoint_every_seconds,
        "0: off; the same as every_minutes, in seconds (set one of the two)")
      .NonNegative();
  s.Add("checkpoint", "keep_last", &c->keep_last, "checkpoints kept (0: all)").NonNegative();
  s.Add("checkpoint", "warm_start", &c->warm_start, "take the weights of this checkpoint first");
}

// Which [data]/[eval] keys act for this run, for the resolved table: a format's own keys only
// for that format (io/pipeline/sources/format_options.cpp says which format each is for), and
// no [eval] key when eval.files is empty. resolved.ini keeps every key.
void MarkActingInputKeys(ConfigSchema& s, const std::string& section,
                         const pipeline::InputSpec* spec, const pipeline::InputSpec* eval) {
  const std::vector<std::pair<const char*, std::vector<std::string>>> format_keys = {
      {"header_lines", {"text", "jsonl"}},
      {"line_bytes", {"text"}},
      {"json_schema", {"jsonl"}},
      {"record_bytes", {"fixed"}},
      {"header_bytes", {"fixed"}},
      {"footer_bytes", {"fixed"}},
      {"tail", {"fixed"}},
      {"on_error", {"jsonl", "images"}},
      {"root", {"images"}},
      {"list", {"images"}},
      {"channels", {"images"}},
      {"label_map", {"images"}},
      {"compression", {"tfrecord"}},
      {"on_corrupt", {"tfrecord"}}};
  for (const std::string& key : s.Keys()) {
    if (key.rfind(section + ".", 0) != 0) continue;
    const std::string name = key.substr(section.size() + 1);
    std::vector<std::string> formats;
    for (const auto& [format_key, its_formats] : format_keys) {
      if (name == format_key) formats = its_formats;
    }
    s.ActsWhen(key, [spec, eval, formats] {
      if (eval != nullptr && eval->data.files.empty()) return false;
      return formats.empty() ||
             std::find(formats.begin(), formats.end(), spec->data.format) != formats.end();
    });
  }
}

}  // namespace

void RegisterExperimentConfig(ConfigSchema& s, ExperimentConfig* c) {
  pipeline::RegisterDataOptions(s, "data", &c->data);
  pipeline::RegisterDataOptions(s, "eval", &c->eval);
  MarkActingInputKeys(s, "data", &c->data, nullptr);
  MarkActingInputKeys(s, "eval", &c->eval, &c->eval);
  s.DescribeSection("eval", "evaluation input (every record once per evaluation); no files: none");
  RegisterModelSection(s, c);
  RegisterTrainSection(s, c);
  RegisterDistAndCheckpointSections(s, c);
  RegisterLogOptions(s, &c->log);
  s.Add("log", "trace", &c->trace, "write a Chrome trace per rank to OUTPUT/trace.rankN.json");
  s.Add("log", "tensorboard", &c->tensorboard,
        "write TensorBoard event files (rank 0) to OUTPUT/tb/train and OUTPUT/tb/validation");
  s.Add("log", "histogram_every", &c->histogram_every,
        "steps between TensorBoard histograms of weights and gradients (0: none)")
      .NonNegative();
  s.Add("log", "stall_factor", &c->stall_factor,
        "a step this many times the median logs where it is stuck: the starved input stage or "
        "the collective and the ranks that had not joined (0: off)")
      .NonNegative();
  s.Add("log", "stall_min_seconds", &c->stall_min_seconds,
        "and only once it has taken at least this many seconds")
      .NonNegative();
}

ModelSetup MakeModelSetup(const ExperimentConfig& c) {
  ModelSetup m;
  m.model_spec = c.model;
  m.input_shape = Shape(c.input_shape.begin(), c.input_shape.end());
  m.model.seed = c.seed;
  m.model.init = ParseInitKind(c.init);
  m.task = c.task == "classify" ? Task::kClassify : Task::kReconstruct;
  m.input_feature = c.input_feature;
  m.label_feature = c.label_feature;
  m.input_scale = c.input_scale;
  m.shorter_sequences = c.data.text.enabled() && c.data.text.pad_to != "max";
  return m;
}

int ResolveThreads(const ExperimentConfig& c, int local_ranks) {
  if (c.threads > 0) return c.threads;
  if (const int64_t n = env::Int("SHARDFLOW_THREADS", 0, 1); n > 0) return static_cast<int>(n);
  return cpu::DefaultThreadsPerRank(local_ranks);
}

std::string ThreadsOverBindingWarning(int threads, int bound_cores, const std::string& key) {
  if (bound_cores <= 0 || threads <= bound_cores) return {};
  const std::string t = std::to_string(threads), b = std::to_string(bound_cores);
  return key + " = " + t + " but this process is bound to " + b +
         (bound_cores == 1 ? " core" : " cores") + ", so its threads share " +
         (bound_cores == 1 ? "it" : "them") +
         " (mpirun binds each rank to one core when it starts 2 or fewer): give mpirun "
         "--map-by slot:PE=" +
         t + " or --bind-to none, or srun --cpus-per-task=" + t;
}

}  // namespace shardflow::apps
