// shardflow-predict: SPMD batch prediction with a trained checkpoint, one process per rank.
//   mpirun -np N shardflow-predict --config FILE --checkpoint CKPT --input FILES --output PATH
// Every rank predicts its shard of the input; rank 0 writes the predictions sorted by id
// (prediction_output.hpp) and reports records/s (and accuracy when the records have labels).
#include <algorithm>
#include <cstdio>

#include "apps/predict/model_loader.hpp"
#include "apps/predict/predict_config.hpp"
#include "apps/predict/prediction_output.hpp"
#include "apps/predict/predictor.hpp"
#include "comm/collectives.hpp"
#include "core/cpu/gemm.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"
#include "core/timer.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/list_files.hpp"

namespace shardflow::predict {
namespace {

struct Prepared {
  apps::ModelSetup options;
  LoadedModel loaded;
  int64_t local_records = 0;
};

int Run(MpiEnvironment& env, PredictAppConfig& config, Prepared& p) {
  const Stopwatch watch;
  // No topology: prediction has no hierarchical collectives. The watchdog is [dist]'s.
  comm::CommunicatorOptions comm_options;
  comm_options.discover_topology = false;
  comm_options.watchdog = comm::WatchdogOptions{.timeout_seconds = config.train.watchdog_seconds};
  comm::Communicator world(comm::Group::kWorld, comm_options);
  PredictorSpec spec;
  spec.batch = {.input_feature = p.options.input_feature,
                .label_feature = p.options.label_feature,
                .input_shape = p.options.input_shape,
                .scale = p.options.input_scale};
  spec.task = p.options.task;
  spec.id_feature = config.id_feature;
  spec.batch_size = config.batch_size;
  const pipeline::Dataset records =
      pipeline::BuildInputPipeline(config.train.data, env.rank(), env.size());
  const PredictionRows mine = PredictDataset(*p.loaded.model, records, spec);

  // Exact sums: rows, expected records (undamaged files), labelled, correct; error sum.
  int64_t counts[4] = {mine.rows(), p.local_records, mine.labelled, mine.correct};
  double error_sum = mine.error_sum;
  comm::AllreduceInt64(world, counts, 4, comm::ReduceOp::kSum);
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
  const PredictionRows all = GatherSorted(world, mine, p.options.task);
  WritePredictions(world, config.output, all, total, p.options.task);
  const double seconds = watch.Seconds();
  if (env.is_chief()) {
    std::printf("predicted %lld records on %d ranks in %.3f s: %.0f records/s\n",
                static_cast<long long>(total), env.size(), seconds,
                seconds > 0 ? static_cast<double>(total) / seconds : 0.0);
    if (p.options.task == apps::Task::kClassify && counts[2] > 0) {
      std::printf("accuracy: %.4f (%lld of %lld labelled records)\n",
                  static_cast<double>(counts[3]) / static_cast<double>(counts[2]),
                  static_cast<long long>(counts[3]), static_cast<long long>(counts[2]));
    }
    if (p.options.task == apps::Task::kReconstruct && total > 0) {
      std::printf("mean reconstruction error: %.6g\n", error_sum / static_cast<double>(total));
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
        pipeline::CheckFilesMatch(config.train.data.data.files,
                                  config.input.empty() ? "data.files" : "--input");
        prepared.options = apps::MakeModelSetup(config.train);
        cpu::SetIntraOpThreads(apps::ResolveThreads(config.train, env.local_size()));
        // Errors found here (missing checkpoint or input, a checkpoint that does not fit the
        // model) end every rank with one line and the same exit code.
        prepared.loaded = predict::LoadModel(prepared.options, config.checkpoint);
        prepared.local_records =
            pipeline::CountLocalRecords(config.train.data, env.rank(), env.size());
      },
      [&](MpiEnvironment& env) { return predict::Run(env, config, prepared); });
}
