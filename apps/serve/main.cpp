// shardflow-serve: online prediction with a trained checkpoint over TensorFlow Serving's REST
// API, one server per rank.
//   shardflow-serve --config FILE --checkpoint CKPT [--port P] [--host ADDR] [--model_name NAME]
//   mpirun -np N shardflow-serve ... --port P     (rank r listens on P + r)
// Requests are queued and grouped into batches (batch_queue.hpp) that num_replicas model
// instances run (model_pool.hpp); a checkpoint directory is watched for newer checkpoints. On
// SIGTERM the server stops accepting, answers what it has queued and exits 0.
// shardflow-serve-cuda is this file linked with the CUDA backend (apps/serve/CMakeLists.txt):
// with train.device = cuda it serves from the rank's GPU, one replica.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <thread>

#include <unistd.h>

#include "apps/common/device_choice.hpp"
#include "apps/common/install_device.hpp"
#include "apps/serve/http_server.hpp"
#include "apps/serve/model_pool.hpp"
#include "apps/serve/serve_config.hpp"
#include "core/cpu/gemm.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"
#include "core/stop_signal.hpp"
#if defined(SHARDFLOW_APP_CUDA)
#include "core/cuda/cuda_backend.hpp"
constexpr bool kHasCudaBackend = true;
#else
constexpr bool kHasCudaBackend = false;
#endif

namespace shardflow::serve {
namespace {

struct Prepared {
  Signature sig;
  std::unique_ptr<ModelPool> pool;
  int port = 0;
  int threads = 1;  // intra-op threads per replica
  // A model on a GPU: what a thread that runs or loads it does first (its device current).
  std::function<void()> thread_setup;
};

// Puts the model on the chosen device: the simulated one (SHARDFLOW_SIMULATE_CUDA=1) or, in
// shardflow-serve-cuda, the rank's GPU, with one replica (the backend runs one stream).
void UseDevice(const apps::DeviceChoice& choice, const ServeAppConfig& config,
               apps::ModelSetup* setup, Prepared* p) {
  if (choice.device == Device::kCpu) return;
  if (config.num_replicas != 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "train.device = cuda serves with one replica per process, not " +
                    std::to_string(config.num_replicas),
                {.key = "serve.num_replicas",
                 .hint = "serve.num_replicas = 1 (a GPU batches the requests: raise "
                         "serve.max_batch_size), or one rank per GPU"});
  }
  setup->model.device = choice.device;
  const apps::InstalledDevice installed = apps::InstallDevice(choice, config.train.tf32);
#if defined(SHARDFLOW_APP_CUDA)
  if (installed == apps::InstalledDevice::kGpu) p->thread_setup = [] { cuda::UseOnThisThread(); };
#else
  (void)installed;
  (void)p;
#endif
}

// Polls the stop signal and, every watch_seconds, the checkpoint directory.
void WaitForStop(const ServeAppConfig& config, HttpServer& http, ModelPool& pool,
                 ServeMetrics& metrics, const std::thread& listener) {
  using namespace std::chrono;
  auto next_watch = steady_clock::now() + duration<double>(config.watch_seconds);
  while (StopSignal() == 0 || !http.running()) {
    std::this_thread::sleep_for(milliseconds(20));
    if (config.watch_seconds > 0 && steady_clock::now() >= next_watch) {
      next_watch = steady_clock::now() + duration<double>(config.watch_seconds);
      try {
        if (pool.Reload(/*force=*/false)) {
          const auto snapshot = pool.Current();
          metrics.SetModelVersion(snapshot->version, true);
          SF_LOG(Info) << "serving version " << snapshot->version << " from "
                       << snapshot->checkpoint;
        }
      } catch (const std::exception& e) {
        SF_LOG(Warn) << "reload failed, still serving version " << pool.version() << ": "
                     << e.what();
      }
    }
    if (!listener.joinable()) break;
  }
}

int Run(MpiEnvironment& env, ServeAppConfig& config, Prepared& p) {
  InstallStopHandlers();
  ServeMetrics metrics;
  metrics.SetModelVersion(p.pool->version(), false);
  BatchQueue queue(BatchOptions{.max_batch_size = config.max_batch_size,
                                .batch_timeout_us = config.batch_timeout_us,
                                .capacity = config.queue_capacity});
  Replicas replicas(queue, *p.pool, p.sig, metrics, config.num_replicas, p.threads, p.thread_setup);
  HttpServer http(HttpOptions{.host = config.host,
                              .port = p.port == 0 ? 0 : p.port + env.rank(),
                              .model_name = config.model_name,
                              .threads = config.http_threads,
                              .max_body_bytes = config.max_body_bytes},
                  p.sig, queue, *p.pool, metrics);
  const int port = http.Bind();
  std::thread listener([&http] { http.Run(); });
  const auto snapshot = p.pool->Current();
  std::printf(
      "serving model %s version %lld from %s (%d replicas x %d threads, "
      "max_batch_size %lld)\n",
      config.model_name.c_str(), static_cast<long long>(snapshot->version),
      snapshot->checkpoint.c_str(), config.num_replicas, p.threads,
      static_cast<long long>(config.max_batch_size));
  // The second line names the node, for slurm/serve.sbatch's list of addresses.
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  if (env.size() > 1) {
    std::printf("listening on %s:%d (rank %d of %d)\n", config.host.c_str(), port, env.rank(),
                env.size());
  } else {
    std::printf("listening on %s:%d\n", config.host.c_str(), port);
  }
  std::printf("rank %d serves http://%s:%d/v1/models/%s\n", env.rank(), host, port,
              config.model_name.c_str());
  std::fflush(stdout);
  WaitForStop(config, http, *p.pool, metrics, listener);
  // Stop accepting; the connections' threads answer the requests they hold (their jobs are
  // queued or running, and go without waiting for fuller batches), then the replicas drain
  // what is left.
  queue.Flush();
  http.Stop();
  listener.join();
  queue.Close();
  replicas.Join();
  std::printf("stopped on %s: %lld requests answered 200, queue drained\n",
              StopSignal() != 0 ? StopSignalName(StopSignal()) : "exit",
              static_cast<long long>(metrics.responses(200)));
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace shardflow::serve

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
        prepared.port = serve::CheckServeFlags(config);
        // Each rank alone, before the model is loaded (apps/common/device_choice.hpp).
        const apps::DeviceChoice device = apps::SelectDevice({.device = config.train.device,
                                                              .work = "serving",
                                                              .rank = env.rank(),
                                                              .local_rank = env.local_rank(),
                                                              .has_backend = kHasCudaBackend});
        apps::ModelSetup setup = apps::MakeModelSetup(config.train);
        serve::UseDevice(device, config, &setup, &prepared);
        // Replicas share the rank's cores: each runs its kernels on its share.
        prepared.threads =
            std::max(1, apps::ResolveThreads(config.train, env.local_size()) / config.num_replicas);
        cpu::SetIntraOpThreads(prepared.threads);
        const Shape output_shape =
            DescribeLayers(setup.model_spec, setup.input_shape, setup.model).back().output_shape;
        prepared.sig = serve::MakeSignature(config.train, setup, output_shape);
        // A missing checkpoint or one that does not fit the model: one line, exit 2.
        serve::ModelPool::Loader loader =
            serve::CheckpointLoader(setup, config.checkpoint, config.num_replicas);
        if (prepared.thread_setup) {  // a reload runs on the watcher's or an HTTP thread
          loader = [loader, setup_thread = prepared.thread_setup] {
            setup_thread();
            return loader();
          };
        }
        prepared.pool = std::make_unique<serve::ModelPool>(
            std::move(loader), serve::NewestCheckpoint(config.checkpoint));
      },
      [&](MpiEnvironment& env) { return serve::Run(env, config, prepared); });
}
