// shardflow-serve's configuration: the training config's sections (the file that trained a model
// also serves it: [model] for the network, [data] for the input feature's dtype) plus [serve]
// and the command-line flags.
// Thread-safety: none; call from the main thread during the parse phase.
#pragma once

#include <cstdint>
#include <string>

#include "apps/common/experiment_config.hpp"
#include "core/cli.hpp"
#include "core/config.hpp"

namespace shardflow::serve {

struct ServeAppConfig {
  apps::ExperimentConfig train;  // [data] [model] ... of the training config
  // [serve]
  int64_t max_batch_size = 32;        // instances per forward pass (1: batching off)
  int64_t batch_timeout_us = 1000;    // how long the first request of a batch waits for others
  int64_t queue_capacity = 1024;      // instances waiting; beyond it: 503 with Retry-After
  int num_replicas = 1;               // model instances (one thread each)
  int http_threads = 64;              // requests answered at once (as many again may wait)
  int64_t max_body_bytes = 16 << 20;  // larger request bodies: 413
  double idle_timeout_seconds = 60;   // idle keep-alive connections closed after; 0: never
  bool reuse_port = false;            // SO_REUSEPORT: share the port with other servers
  double watch_seconds = 1.0;         // checkpoint directory poll interval; 0: no watching
  // Flags.
  std::string checkpoint;  // a checkpoint file or a directory of checkpoints
  std::string host = "127.0.0.1";
  std::string port = "8501";  // rank r listens on port + r; 0: any free port
  std::string model_name = "default";
};

// Registers the training sections and [serve]. REQUIRES: *config outlives the schema.
void RegisterServeConfig(ConfigSchema& schema, ServeAppConfig* config);

// Adds --checkpoint, --host, --port and --model_name to `app`.
void AddServeFlags(AppSpec& app, ServeAppConfig* config);

// Checks the flags; Error(kInvalidArgument) naming the flag. Returns the base port.
int CheckServeFlags(const ServeAppConfig& config);

}  // namespace shardflow::serve
