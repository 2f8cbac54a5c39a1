// shardflow-serve: online prediction with a trained checkpoint over TensorFlow Serving's REST
// API, one server per rank.
//   shardflow-serve --config FILE --checkpoint CKPT [--port P] [--host ADDR] [--model_name NAME]
//   mpirun -np N shardflow-serve ... --port P     (rank r listens on P + r)
// Requests are queued and grouped into batches (batch_queue.hpp) that num_replicas model
// instances run (model_pool.hpp); a checkpoint directory is watched for newer checkpoints. On
// SIGTERM the server stops accepting, answers every request its connections sent and exits 0.
// shardflow-serve-cuda is this program linked with the CUDA backend (apps/serve/CMakeLists.txt):
// with train.device = cuda it serves from the rank's GPU, one replica.
// main() parses the command line; Prepare (prepare.hpp) checks and loads the model in the parse
// phase; Run (run.hpp) serves.
#include "apps/serve/prepare.hpp"
#include "apps/serve/run.hpp"
#include "apps/serve/serve_config.hpp"
#include "core/cli.hpp"
#include "core/config.hpp"
#include "core/mpi_env.hpp"

int main(int argc, char** argv) {
  using namespace shardflow;
  serve::ServeAppConfig config;
  serve::Prepared prepared;
  ConfigSchema schema;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment& env) {
        serve::RegisterServeConfig(schema, &config);
        AppSpec app("shardflow-serve",
                    "online prediction over TensorFlow Serving's REST API, with dynamic "
                    "micro-batching and hot reload; rank r listens on --port + r");
        serve::AddServeFlags(app, &config);
        app.RequireConfig(true).PrintResolved(false);
        ParseCommandLine(argc, argv, schema, app);
        serve::Prepare(env, config, &prepared);
      },
      [&](MpiEnvironment& env) { return serve::Run(env, config, prepared); });
}
