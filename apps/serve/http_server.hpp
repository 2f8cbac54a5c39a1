// shardflow-serve's HTTP front end (cpp-httplib): TensorFlow Serving's REST routes
//   POST /v1/models/NAME:predict   parse (request_json.hpp), queue, wait, answer
//   POST /v1/models/NAME:reload    switch to the newest checkpoint now (shardflow's own)
//   GET  /v1/models/NAME           version status
//   GET  /v1/models/NAME/metadata  the signature
//   GET  /metrics                  Prometheus text
// Statuses: 400 bad request {"error": ...}; 404 another model name or path; 413 a body over
// serve.max_body_bytes; 503 + Retry-After when the queue is full or the server is stopping; 500
// when a batch failed. Each connection holds one of http_threads threads while it is open.
// Stop() stops accepting; requests already read are answered before Run() returns.
// Thread-safety: Stop() may be called from any thread; Bind() then Run() from one.
#pragma once

#include <memory>
#include <string>

#include "apps/serve/batch_queue.hpp"
#include "apps/serve/model_pool.hpp"
#include "apps/serve/serve_metrics.hpp"
#include "apps/serve/signature.hpp"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace shardflow::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8501;  // 0: any free port
  std::string model_name = "default";
  int threads = 64;
  int64_t max_body_bytes = 16 << 20;
};

class HttpServer {
 public:
  HttpServer(HttpOptions options, const Signature& sig, BatchQueue& queue, ModelPool& pool,
             ServeMetrics& metrics);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket; returns the port. Throws Error(kIo) naming host:port.
  int Bind();
  // Serves until Stop(); returns after the connections' threads end.
  void Run();
  void Stop();
  // Whether Run() is accepting connections (Stop() before that has no effect).
  bool running() const;

 private:
  void Routes();
  // Answers 404 and returns true when the request's model name is not the served one.
  bool OtherModel(const httplib::Request& req, httplib::Response& res) const;
  void Reload(httplib::Response& res);
  void Predict(const std::string& name, const std::string& body, int* status, std::string* out,
               std::string* version);

  const HttpOptions options_;
  const Signature& sig_;
  BatchQueue& queue_;
  ModelPool& pool_;
  ServeMetrics& metrics_;
  std::unique_ptr<httplib::Server> server_;
};

}  // namespace shardflow::serve
