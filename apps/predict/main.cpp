// shardflow-predict: SPMD batch prediction with a trained checkpoint, one process per rank.
//   mpirun -np N shardflow-predict --config FILE --checkpoint CKPT --input FILES --output PATH
// Every rank predicts its shard of the input; rank 0 writes the predictions sorted by id
// (prediction_output.hpp) and reports records/s (and accuracy when the records have labels).
// With [dist] pipeline_stages / tensor_parallel the model is split over the ranks as in
// training (any grid, whatever grid wrote the checkpoint) and batches run pipelined through
// its stages in dist.micro_batches micro-batches.
// main() parses the command line; Prepare (prepare.hpp) checks and loads the model in the parse
// phase; Run (run.hpp) predicts.
#include "apps/predict/predict_config.hpp"
#include "apps/predict/prepare.hpp"
#include "apps/predict/run.hpp"
#include "core/cli.hpp"
#include "core/config.hpp"
#include "core/mpi_env.hpp"

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
        predict::Prepare(env, &config, &prepared);
      },
      [&](MpiEnvironment& env) { return predict::Run(env, config, prepared); });
}
