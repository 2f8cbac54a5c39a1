// shardflow-predict: SPMD batch prediction with a trained checkpoint, one process per rank.
//   mpirun -np N shardflow-predict --config FILE --checkpoint CKPT --input FILES --output PATH
// Every rank predicts its shard of the input; rank 0 writes the predictions sorted by id
// (prediction_output.hpp) and reports records/s (and accuracy when the records have labels).
// With [dist] pipeline_stages / tensor_parallel the model is split over the ranks as in
// training (any grid, whatever grid wrote the checkpoint) and batches run pipelined through
// its stages in dist.micro_batches micro-batches.
#include <algorithm>
#include <cstdio>

#include "apps/common/device_choice.hpp"
#include "apps/common/install_device.hpp"
#include "apps/common/pipeline_stage.hpp"
#include "apps/common/prediction/model_loader.hpp"
#include "apps/common/prediction/predictor.hpp"
#include "apps/common/stage_plan.hpp"
#include "apps/common/tensor_sum.hpp"
#include "apps/predict/predict_config.hpp"
#include "apps/predict/prediction_output.hpp"
#include "comm/allreduce.hpp"
#include "comm/collectives.hpp"
#include "core/cpu/gemm.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"
#include "core/timer.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/pipeline/sources/source_counters.hpp"

// shardflow-predict-cuda is this file linked with the CUDA backend (apps/predict/CMakeLists.txt).
#if defined(SHARDFLOW_APP_CUDA)
constexpr bool kHasCudaBackend = true;
#else
constexpr bool kHasCudaBackend = false;
#endif

namespace shardflow::predict {
namespace {

// Puts the model on the chosen device: the simulated one (SHARDFLOW_SIMULATE_CUDA=1) or, in
// shardflow-predict-cuda, the rank's GPU; each rank of a grid its part's.
void UseDevice(const apps::DeviceChoice& choice, bool tf32, apps::ModelSetup* options) {
  if (choice.device == Device::kCpu) return;
  options->model.device = choice.device;
  apps::InstallDevice(choice, tf32);
}

struct Prepared {
  apps::ModelSetup options;
  apps::GridShape grid;  // [dist] pipeline_stages x tensor_parallel; data replicas the rest
  apps::RankPlan plan;
  Shape output_shape;  // the whole model's, per sample (a stage's part has its own)
  apps::LoadedModel loaded;
  int64_t local_records = 0;
  std::unique_ptr<comm::Communicator> tensor;   // this stage's tensor ways (made in Run)
  std::unique_ptr<apps::TensorSum> tensor_sum;  // the layers' sums over them
};

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

int Run(MpiEnvironment& env, PredictAppConfig& config, Prepared& p) {
  const Stopwatch watch;
  // No topology: prediction has no hierarchical collectives. The watchdog is [dist]'s.
  comm::CommunicatorOptions comm_options;
  comm_options.discover_topology = false;
  comm_options.watchdog = comm::WatchdogOptions{.timeout_seconds = config.train.watchdog_seconds};
  comm::Communicator world(comm::Group::kWorld, comm_options);
  apps::PredictorSpec spec;
  spec.batch = {.input_feature = p.options.input_feature,
                .label_feature = p.options.label_feature,
                .input_shape = p.options.input_shape,
                .scale = p.options.input_scale};
  spec.task = p.options.task;
  spec.id_feature = config.id_feature;
  spec.record_index = pipeline::MakeRecordNumbering(config.train.data);
  spec.batch_size = config.batch_size;
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
  WritePredictions(world, config.output, all, total, p.options.task);
  const double seconds = watch.Seconds();
  if (env.is_chief()) {
    std::printf("predicted %lld records on %d ranks%s in %.3f s: %.0f records/s\n",
                static_cast<long long>(total), env.size(),
                p.grid.model_parallel() ? (" (" + p.grid.ToString() + ")").c_str() : "", seconds,
                seconds > 0 ? static_cast<double>(total) / seconds : 0.0);
    if (p.options.task == apps::Task::kClassify && counts[2] > 0) {
      std::printf("accuracy: %.4f (%lld of %lld labelled records)\n",
                  static_cast<double>(counts[3]) / static_cast<double>(counts[2]),
                  static_cast<long long>(counts[3]), static_cast<long long>(counts[2]));
    }
    if (p.options.task == apps::Task::kReconstruct && total > 0) {
      std::printf("mean reconstruction error: %.6g\n", error_sum / static_cast<double>(total));
    }
    if (counts[4] > 0) {
      std::printf("skipped %lld bad records (on_error = skip)\n",
                  static_cast<long long>(counts[4]));
    }
    std::printf("predictions of %s in %s\n", p.loaded.checkpoint.c_str(), config.output.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace shardflow::predict

int main(int argc, char** argv) {
  using namespace shardflow;
  predict::PredictAppConfig config;
  predict::Prepared prepared;
  ConfigSchema schema;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment& env) {
        predict::RegisterPredictConfig(schema, &config);
        AppSpec app("shardflow-predict",
                    "batch prediction with a trained checkpoint; every rank predicts its shard of "
                    "the input, rank 0 writes the predictions sorted by record id");
        predict::AddPredictFlags(app, &config);
        app.RequireConfig(true).PrintResolved(false);
        ParseCommandLine(argc, argv, schema, app);
        predict::PrepareInputSpec(&config);
        pipeline::CheckInputFilesMatch(config.train.data,
                                       config.input.empty() ? "data.files" : "--input");
        // Each rank alone, before the model is loaded (apps/common/device_choice.hpp).
        const apps::DeviceChoice device = apps::SelectDevice({.device = config.train.device,
                                                              .work = "predicting",
                                                              .rank = env.rank(),
                                                              .local_rank = env.local_rank(),
                                                              .has_backend = kHasCudaBackend});
        prepared.options = apps::MakeModelSetup(config.train);
        const int threads = apps::ResolveThreads(config.train, env.local_size());
        cpu::SetIntraOpThreads(threads);
        if (env.local_rank() == 0) {  // once per node
          const std::string w =
              apps::ThreadsOverBindingWarning(threads, cpu::BoundCores(), "train.threads");
          if (!w.empty()) SF_LOG(Warn) << w;
        }
        // A model split over ranks predicts on the grid it is given ([dist] pipeline_stages,
        // tensor_parallel), whatever grid trained it: a usage error when the ranks do not factor.
        predict::Prepared& p = prepared;
        p.grid = apps::MakeGridShape(env.size(), config.train.pipeline_stages,
                                     config.train.tensor_parallel);
        predict::UseDevice(device, config.train.tf32, &p.options);
        p.plan = apps::PlanRank(p.options, p.grid,
                                std::vector<int>(config.train.stage_boundaries.begin(),
                                                 config.train.stage_boundaries.end()),
                                env.rank());
        p.output_shape =
            DescribeLayers(p.options.model_spec, p.options.input_shape, p.options.model)
                .back()
                .output_shape;
        apps::ModelSetup part = p.options;
        if (p.grid.ways > 1) {
          part.model.tensor_parallel = {
              .way = p.plan.place.way, .ways = p.grid.ways, .sum_float = [&p](float* x, int64_t n) {
                (*p.tensor_sum)(x, n);
              }};
        }
        // Errors found here (missing checkpoint or input, a checkpoint that does not fit the
        // model) end every rank with one line and the same exit code.
        p.loaded = apps::LoadModel(part, config.checkpoint, p.plan.range);
        p.local_records =
            pipeline::CountLocalRecords(config.train.data, p.plan.place.replica, p.grid.replicas);
      },
      [&](MpiEnvironment& env) { return predict::Run(env, config, prepared); });
}
