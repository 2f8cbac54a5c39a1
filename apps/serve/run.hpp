// shardflow-serve's run: the server of one rank. Requests are queued and grouped into batches
// (batch_queue.hpp) that serve.num_replicas model instances run (model_pool.hpp); a checkpoint
// directory is watched for newer checkpoints every serve.watch_seconds. On SIGTERM or SIGUSR1
// the server stops accepting, answers every request its connections sent (connection_poller.hpp)
// and returns 0.
// Thread-safety: the main thread, once; the ranks serve alone (no collective).
#pragma once

#include "apps/serve/prepare.hpp"
#include "apps/serve/serve_config.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::serve {

// Serves on the socket Prepare opened (p.socket), prints the address lines slurm/serve.sbatch
// reads, serves until stopped. Returns the exit code (0); throws Error(kIo) when the poller
// fails.
int Run(MpiEnvironment& env, const ServeAppConfig& config, Prepared& p);

}  // namespace shardflow::serve
