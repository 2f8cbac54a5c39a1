#include "apps/serve/serve_config.hpp"

#include <cstdlib>

#include "core/error.hpp"

namespace shardflow::serve {

void RegisterServeConfig(ConfigSchema& schema, ServeAppConfig* c) {
  apps::RegisterExperimentConfig(schema, &c->train);
  schema.DescribeSection("serve", "online prediction (shardflow-serve)");
  schema
      .Add("serve", "max_batch_size", &c->max_batch_size,
           "instances grouped into one forward pass (1: no batching); a request with more "
           "instances runs alone")
      .Positive();
  schema
      .Add("serve", "batch_timeout_us", &c->batch_timeout_us,
           "microseconds the oldest queued request waits for others to fill a batch")
      .NonNegative();
  schema
      .Add("serve", "queue_capacity", &c->queue_capacity,
           "instances waiting for a replica; a request that does not fit gets 503 + Retry-After")
      .Positive();
  schema
      .Add("serve", "num_replicas", &c->num_replicas,
           "model instances per process, one inference thread each; the intra-op threads are "
           "the rank's threads divided among them")
      .Positive();
  schema
      .Add("serve", "http_threads", &c->http_threads,
           "HTTP worker threads: requests answered at once (an idle keep-alive connection holds "
           "none); as many more may wait for a thread, beyond that 503 + Retry-After")
      .Positive();
  schema
      .Add("serve", "max_body_bytes", &c->max_body_bytes,
           "largest request body accepted, whatever its Content-Type; larger: 413 naming both "
           "sizes")
      .Positive();
  schema
      .Add("serve", "idle_timeout_seconds", &c->idle_timeout_seconds,
           "a keep-alive connection idle this long is closed, and a request left unfinished (no "
           "byte for this long) gets 408; 0: never")
      .NonNegative();
  schema.Add("serve", "reuse_port", &c->reuse_port,
             "listen with SO_REUSEPORT: servers that all set it share --port, the kernel "
             "splitting connections among them; false (default): a taken port is an error at "
             "start, naming the process that holds it");
  schema
      .Add("serve", "watch_seconds", &c->watch_seconds,
           "how often a checkpoint directory is checked for a newer checkpoint (hot reload); "
           "0: only POST /v1/models/NAME:reload")
      .NonNegative();
}

void AddServeFlags(AppSpec& app, ServeAppConfig* c) {
  app.Flag("checkpoint", &c->checkpoint, "CKPT",
           "a checkpoint file, or a directory whose newest intact checkpoint is served (and "
           "watched for newer ones)")
      .Flag("host", &c->host, "ADDR", "address to listen on")
      .Flag("port", &c->port, "P",
            "port of rank 0 (rank r: P + r); 0: any free port; a port in use is an error at "
            "start (exit 2) naming the process that holds it")
      .Flag("model_name", &c->model_name, "NAME", "the model's name in /v1/models/NAME");
  // The file that trains also serves: the keys serving reads are listed, the rest accepted.
  app.HelpKeys({"model.", "serve.", "data.features", "train.device", "train.threads",
                "train.precision", "train.tf32", "log.level", "log.file"});
}

int CheckServeFlags(const ServeAppConfig& c) {
  if (c.checkpoint.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--checkpoint is required",
                {.key = "--checkpoint", .hint = "a checkpoint file or directory"});
  }
  char* end = nullptr;
  const long port = std::strtol(c.port.c_str(), &end, 10);
  if (c.port.empty() || *end != '\0' || port < 0 || port > 65535) {
    throw Error(ErrorCode::kInvalidArgument,
                "--port must be an integer in [0, 65535], got '" + c.port + "'", {.key = "--port"});
  }
  if (c.model_name.empty() || c.model_name.find_first_of("/: ") != std::string::npos) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "--model_name must be non-empty without '/', ':' or spaces, got '" + c.model_name + "'",
        {.key = "--model_name"});
  }
  return static_cast<int>(port);
}

}  // namespace shardflow::serve
