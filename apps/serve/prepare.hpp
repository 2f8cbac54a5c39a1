// shardflow-serve's checks before a run, and what they leave for Run (run.hpp).
//
// Prepare is the rest of the parse phase once the command line is read: it runs on every rank
// alike, before any collective, so an error found here (a bad flag, a port in use, no usable
// GPU, more than one replica on a GPU, an input feature the server cannot take, a missing
// checkpoint or one that does not fit the model) ends every rank with one line and the same
// exit code (core/mpi_env.hpp).
// Thread-safety: the main thread, once.
#pragma once

#include <functional>
#include <memory>

#include "apps/serve/listen_socket.hpp"
#include "apps/serve/model_pool.hpp"
#include "apps/serve/serve_config.hpp"
#include "apps/serve/signature.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::serve {

struct Prepared {
  Signature sig;
  std::unique_ptr<ModelPool> pool;
  int port = 0;         // --port: rank 0's
  ListenSocket socket;  // this rank's, listening on --port + rank (or a free port for 0)
  int threads = 1;      // intra-op threads per replica
  // A model on a GPU: what a thread that runs or loads it does first (its device current).
  std::function<void()> thread_setup;
};

// Checks the flags; listens on this rank's port (Error(kInvalidArgument) when it is taken,
// naming the process that holds it: a server not yet loaded); chooses this rank's device
// (train.device) and sets the intra-op threads (the rank's share, split over serve.num_replicas);
// makes the signature; loads the first snapshot of the model pool from the checkpoint. REQUIRES:
// the command line parsed into `config`.
void Prepare(MpiEnvironment& env, const ServeAppConfig& config, Prepared* p);

}  // namespace shardflow::serve
