// shardflow-serve's HTTP front end: TensorFlow Serving's REST routes over the connection
// poller (connection_poller.hpp: connections, framing, worker threads, drain).
//   POST /v1/models/NAME:predict   parse (request_json.hpp), queue, wait, answer
//   POST /v1/models/NAME:reload    switch to the newest checkpoint now (shardflow's own)
//   GET  /v1/models/NAME           version status
//   GET  /v1/models/NAME/metadata  the signature
//   GET  /metrics                  Prometheus text
// Statuses ({"error": ...} bodies): 400 a bad request (the instance and field it names), or a
// reload whose checkpoint is missing, damaged or does not fit the model (the served model
// stays); 404 another model name or path; 405 a route's other method (Allow names its own);
// 413 a body over serve.max_body_bytes; 503 + Retry-After when the model queue is full, every
// HTTP thread is busy with more waiting, or the server is stopping; 500 a batch or a reload
// that failed on the server's side (an I/O error, a bug). The request body is JSON whatever its
// Content-Type.
// Stop() starts the drain; Run() returns once every request read has been answered.
// Thread-safety: Stop() may be called from any thread; Run() from one; Handle() from the
// worker threads.
#pragma once

#include <memory>
#include <string>

#include "apps/serve/batch_queue.hpp"
#include "apps/serve/connection_poller.hpp"
#include "apps/serve/http_message.hpp"
#include "apps/serve/listen_socket.hpp"
#include "apps/serve/model_pool.hpp"
#include "apps/serve/serve_metrics.hpp"
#include "apps/serve/signature.hpp"

namespace shardflow::serve {

struct HttpOptions {
  std::string model_name = "default";
  int threads = 64;  // worker threads; as many requests again may wait for one
  int64_t max_body_bytes = 16 << 20;
  double idle_timeout_seconds = 60;
};

class HttpServer {
 public:
  HttpServer(ListenSocket socket, HttpOptions options, const Signature& sig, BatchQueue& queue,
             ModelPool& pool, ServeMetrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Serves until Stop() and the drain's end. Throws Error(kIo) when the poller fails.
  void Run();
  void Stop();

  // Answers one request (the routes above).
  HttpResponse Handle(const HttpRequest& req);

 private:
  HttpResponse Predict(const std::string& name, const std::string& body);
  HttpResponse Reload();
  // The response of every route but predict for a model name other than the served one.
  HttpResponse OtherModel(const std::string& name) const;
  void Sent(const std::string& target, int status, bool handled);

  const HttpOptions options_;
  const int port_;
  const Signature& sig_;
  BatchQueue& queue_;
  ModelPool& pool_;
  ServeMetrics& metrics_;
  std::unique_ptr<ConnectionPoller> poller_;
};

}  // namespace shardflow::serve
