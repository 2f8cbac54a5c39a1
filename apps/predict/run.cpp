#include "apps/predict/run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "apps/common/pipeline_schedule.hpp"
#include "apps/common/pipeline_stage.hpp"
#include "apps/common/prediction/predictor.hpp"
#include "apps/predict/generate.hpp"
#include "apps/predict/prediction_output.hpp"
#include "comm/allreduce.hpp"
#include "comm/collectives.hpp"
#include "core/logging.hpp"
#include "core/timer.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/pipeline/sources/source_counters.hpp"

namespace shardflow::predict {
namespace {

// The model's forward pass on this rank: the whole model, or this rank's stage and tensor way
// of a pipelined model (outputs on the last stage's way 0, the rows' reporter).
apps::ForwardFn MakeForward(Prepared& p, comm::Communicator& world,
                            std::unique_ptr<comm::Communicator>* pipe,
                            std::unique_ptr<apps::PipelineStage>* stage, int micro_batches) {
  Sequential<float>& model = *p.loaded.model;
  if (!p.grid.model_parallel()) {
    return [&model](const Tensor& x) { return model.Forward(x, /*training=*/false); };
  }
  const apps::GridPlace& at = p.plan.place;
  comm::CommunicatorOptions options;
  options.discover_topology = false;
  options.watchdog = world.watchdog() != nullptr
                         ? std::optional<comm::WatchdogOptions>(comm::WatchdogOptions{
                               .timeout_seconds = world.watchdog()->timeout_seconds()})
                         : std::nullopt;
  *pipe = world.Split(at.replica * p.grid.ways + at.way, at.stage, options);
  options.discover_topology = true;
  p.tensor = world.Split(at.stage * p.grid.replicas + at.replica, at.way, options);
  p.tensor_sum = std::make_unique<apps::TensorSum>(*p.tensor, model.arena().device());
  *stage = std::make_unique<apps::PipelineStage>(**pipe, model);
  const bool reporter = at.stage == p.grid.stages - 1 && at.way == 0;
  apps::PipelineStage* s = stage->get();
  return [s, reporter, micro_batches, &model](const Tensor& x) {
    const int64_t rows = x.num_elements() > 0 ? x.dim(0) : 0;
    std::vector<int64_t> parts = apps::MicroBatchRows(rows, micro_batches);
    parts.erase(std::remove(parts.begin(), parts.end(), int64_t{0}), parts.end());
    Tensor out;
    if (reporter) out = Tensor(DType::kFloat32, WithBatch(rows, model.output_shape()));
    s->Infer(parts, x, [&](const Tensor& y, int64_t begin, int64_t end) {
      if (!reporter) return;
      const size_t width =
          static_cast<size_t>(y.num_elements() / std::max<int64_t>(1, end - begin));
      const Tensor host = y.To(Device::kCpu);  // a model on a device: its outputs copied back
      std::copy_n(host.data<float>(), host.num_elements(), out.data<float>() + begin * width);
    });
    return out;
  };
}

// The predictor's view of the records: the model's input and label, the task, the ids.
apps::PredictorSpec MakePredictorSpec(const PredictAppConfig& config,
                                      const apps::ModelSetup& options) {
  apps::PredictorSpec spec;
  spec.batch = {.input_feature = options.input_feature,
                .label_feature = options.label_feature,
                .input_shape = options.input_shape,
                .scale = options.input_scale};
  spec.task = options.task;
  spec.id_feature = config.id_feature;
  spec.record_index = pipeline::MakeRecordNumbering(config.train.data);
  spec.batch_size = config.batch_size;
  return spec;
}

// Rank 0's lines: `counts` are the exact sums Run reduced (rows, expected records, labelled,
// correct, bad records skipped), `error_sum` the reconstruction errors' sum.
void PrintReport(const MpiEnvironment& env, const PredictAppConfig& config, const Prepared& p,
                 const int64_t (&counts)[5], double error_sum, double seconds) {
  const int64_t total = counts[0];
  std::printf("predicted %lld records on %d rank%s%s in %.3f s: %.0f records/s\n",
              static_cast<long long>(total), env.size(), env.size() == 1 ? "" : "s",
              p.grid.model_parallel() ? (" (" + p.grid.ToString() + ")").c_str() : "", seconds,
              seconds > 0 ? static_cast<double>(total) / seconds : 0.0);
  const bool sequence = p.options.task == apps::Task::kClassify && p.output_shape.size() == 2;
  if (sequence && total > 0) {
    const double loss = error_sum / static_cast<double>(total);
    std::printf(
        "loss: %.4f nats per token (%.4f bits), next-token accuracy %.4f (%lld of %lld "
        "positions)\n",
        loss, loss / std::log(2.0),
        counts[2] > 0 ? static_cast<double>(counts[3]) / static_cast<double>(counts[2]) : 0.0,
        static_cast<long long>(counts[3]), static_cast<long long>(counts[2]));
  } else if (p.options.task == apps::Task::kClassify && counts[2] > 0) {
    std::printf("accuracy: %.4f (%lld of %lld labelled records)\n",
                static_cast<double>(counts[3]) / static_cast<double>(counts[2]),
                static_cast<long long>(counts[3]), static_cast<long long>(counts[2]));
  }
  if (p.options.task == apps::Task::kReconstruct && total > 0) {
    std::printf("mean reconstruction error: %.6g\n", error_sum / static_cast<double>(total));
  }
  if (counts[4] > 0) {
    std::printf("skipped %lld bad records (on_error = skip)\n", static_cast<long long>(counts[4]));
  }
  std::printf("predictions of %s in %s\n", p.loaded.checkpoint.c_str(), config.output.c_str());
  std::fflush(stdout);
}

}  // namespace

int Run(MpiEnvironment& env, const PredictAppConfig& config, Prepared& p) {
  if (!config.generate.empty()) {  // rank 0 samples; the others have nothing to do
    if (!env.is_chief()) return 0;
    const std::string text =
        Generate(*p.loaded.model, {.prompt = config.generate,
                                   .tokens = config.generate_tokens,
                                   .temperature = config.temperature,
                                   .top_k = config.top_k,
                                   .seed = static_cast<uint64_t>(config.seed)});
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    return 0;
  }
  const Stopwatch watch;
  // No topology: prediction has no hierarchical collectives. The watchdog is [dist]'s.
  comm::CommunicatorOptions comm_options;
  comm_options.discover_topology = false;
  comm_options.watchdog = comm::WatchdogOptions{.timeout_seconds = config.train.watchdog_seconds};
  comm::Communicator world(comm::Group::kWorld, comm_options);
  const apps::PredictorSpec spec = MakePredictorSpec(config, p.options);
  // Every rank of a model replica reads the replica's shard; its reporter records the rows.
  const apps::GridPlace& at = p.plan.place;
  const bool reporter = at.stage == p.grid.stages - 1 && at.way == 0;
  const pipeline::Dataset records =
      pipeline::BuildInputPipeline(config.train.data, at.replica, p.grid.replicas);
  std::unique_ptr<comm::Communicator> pipe;
  std::unique_ptr<apps::PipelineStage> stage;
  // Every communicator ends before MPI does (the tensor ways' is reached from the model).
  struct EndTensorComm {
    Prepared& p;
    ~EndTensorComm() {
      p.tensor_sum.reset();
      p.tensor.reset();
    }
  } end_tensor_comm{p};
  const int micro_batches = config.train.micro_batches > 0
                                ? static_cast<int>(config.train.micro_batches)
                                : 2 * p.grid.stages;
  const apps::ForwardFn forward = MakeForward(p, world, &pipe, &stage, micro_batches);
  const apps::PredictionRows mine = apps::PredictDataset(forward, p.output_shape, records, spec);

  // Exact sums: rows, expected records (undamaged files), labelled, correct, bad records
  // skipped (on_error = skip; each once, by the replica's reporter); error sum.
  int64_t counts[5] = {mine.rows(), reporter ? p.local_records : 0, mine.labelled, mine.correct,
                       reporter ? pipeline::DistinctSkippedRecords() : 0};
  double error_sum = mine.error_sum;
  comm::AllreduceInt64(world, counts, 5, comm::ReduceOp::kSum);
  error_sum = comm::AllreduceDouble(world, error_sum, comm::ReduceOp::kSum);
  const int64_t total = counts[0];
  if (total != counts[1]) {
    if (config.train.data.on_corrupt == "skip") {
      SF_LOG0(Warn) << "predicted " << total << " records of " << counts[1]
                    << " (damaged records skipped)";
    } else {
      throw Error(ErrorCode::kInternal, "predicted " + std::to_string(total) +
                                            " records, the input holds " +
                                            std::to_string(counts[1]));
    }
  }
  const apps::PredictionRows all = GatherSorted(world, mine, p.options.task);
  std::string input;
  for (const std::string& f : config.train.data.data.files) {
    input += (input.empty() ? "" : ",") + f;
  }
  WritePredictions(world, config.output, all,
                   {.total = total,
                    .task = p.options.task,
                    .sequence = mine.sequence,
                    .labelled = counts[2],
                    .checkpoint = p.loaded.checkpoint,
                    .input = input});
  const double seconds = watch.Seconds();
  if (env.is_chief()) PrintReport(env, config, p, counts, error_sum, seconds);
  return 0;
}

}  // namespace shardflow::predict
