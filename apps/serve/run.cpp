#include "apps/serve/run.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include <unistd.h>

#include "apps/serve/batch_queue.hpp"
#include "apps/serve/http_server.hpp"
#include "apps/serve/model_pool.hpp"
#include "apps/serve/serve_metrics.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/stop_signal.hpp"

namespace shardflow::serve {
namespace {

// Polls the stop signal and, every watch_seconds, the checkpoint directory, until a stop
// signal or the listener's end (an error).
void WaitForStop(const ServeAppConfig& config, ModelPool& pool, ServeMetrics& metrics,
                 const std::atomic<bool>& listener_done) {
  using namespace std::chrono;
  auto next_watch = steady_clock::now() + duration<double>(config.watch_seconds);
  while (StopSignal() == 0 && !listener_done.load()) {
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
  }
}

void PrintBanner(MpiEnvironment& env, const ServeAppConfig& config, const Prepared& p, int port) {
  const auto snapshot = p.pool->Current();
  std::printf(
      "serving model %s version %lld from %s (%d replicas x %d threads, "
      "max_batch_size %lld)\n",
      config.model_name.c_str(), static_cast<long long>(snapshot->version),
      snapshot->checkpoint.c_str(), config.num_replicas, p.threads,
      static_cast<long long>(config.max_batch_size));
  std::printf(
      "http: %d threads (serve.http_threads), %d more requests may wait for one (then 503), "
      "idle connections closed after %g s (serve.idle_timeout_seconds)\n",
      config.http_threads, config.http_threads, config.idle_timeout_seconds);
  // The next line names the node, for slurm/serve.sbatch's list of addresses.
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
}

}  // namespace

int Run(MpiEnvironment& env, const ServeAppConfig& config, Prepared& p) {
  InstallStopHandlers();
  ServeMetrics metrics;
  metrics.SetModelVersion(p.pool->version(), false);
  BatchQueue queue(BatchOptions{.max_batch_size = config.max_batch_size,
                                .batch_timeout_us = config.batch_timeout_us,
                                .capacity = config.queue_capacity});
  Replicas replicas(queue, *p.pool, p.sig, metrics, config.num_replicas, p.threads, p.thread_setup);
  HttpServer http(std::move(p.socket),
                  HttpOptions{.model_name = config.model_name,
                              .threads = config.http_threads,
                              .max_body_bytes = config.max_body_bytes,
                              .idle_timeout_seconds = config.idle_timeout_seconds},
                  p.sig, queue, *p.pool, metrics);
  std::atomic<bool> listener_done{false};
  std::string listener_error;
  std::thread listener([&] {
    try {
      http.Run();
    } catch (const std::exception& e) {
      listener_error = e.what();
    }
    listener_done.store(true);
  });
  PrintBanner(env, config, p, http.port());
  WaitForStop(config, *p.pool, metrics, listener_done);
  // Stop accepting; every request read is answered (their jobs go without waiting for fuller
  // batches) and the connections close; then the replicas drain what is left. The HTTP side
  // stops first: a held request the flush answers must find it draining (Connection: close),
  // not answer it as if the server went on.
  http.Stop();
  queue.Flush();
  listener.join();
  queue.Close();
  replicas.Join();
  if (!listener_error.empty()) throw Error(ErrorCode::kIo, listener_error);
  std::printf("stopped on %s: %lld requests answered 200, queue drained\n",
              StopSignal() != 0 ? StopSignalName(StopSignal()) : "exit",
              static_cast<long long>(metrics.responses(200)));
  std::fflush(stdout);
  return 0;
}

}  // namespace shardflow::serve
