#include "apps/serve/http_server.hpp"

#include <httplib.h>
#include <sys/socket.h>

#include "apps/serve/request_json.hpp"
#include "apps/serve/response_json.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::serve {
namespace {

constexpr const char* kJson = "application/json";

// httplib 0.11 listens with a backlog of 5: 64 clients connecting at once overflow it (the
// kernel then drops handshakes, and some connections are reset; measured with 64 load-client
// connections). Listening again on the bound socket raises the backlog.
class Server : public httplib::Server {
 public:
  bool RaiseBacklog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

const char* StatusText(int status) {
  switch (status) {
    case 400:
      return "bad request";
    case 404:
      return "not found: the routes are /v1/models/NAME[:predict|:reload|/metadata] and /metrics";
    case 405:
      return "method not allowed";
    default:
      return "error";
  }
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

HttpServer::HttpServer(HttpOptions options, const Signature& sig, BatchQueue& queue,
                       ModelPool& pool, ServeMetrics& metrics)
    : options_(std::move(options)),
      sig_(sig),
      queue_(queue),
      pool_(pool),
      metrics_(metrics),
      server_(std::make_unique<Server>()) {
  const int threads = options_.threads;
  server_->new_task_queue = [threads] {
    return new httplib::ThreadPool(static_cast<size_t>(threads));
  };
  server_->set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
  server_->set_keep_alive_max_count(1000000);
  server_->set_tcp_nodelay(true);
  Routes();
}

HttpServer::~HttpServer() = default;

void HttpServer::Predict(const std::string& name, const std::string& body, int* status,
                         std::string* out, std::string* version) {
  if (name != options_.model_name) {
    *status = 404;
    *out = ErrorResponse("Servable not found for request: Latest(" + name + ")");
    return;
  }
  ParsedRequest request;
  try {
    request = ParsePredictRequest(body, sig_);
  } catch (const RequestError& e) {
    *status = 400;
    *out = ErrorResponse(e.what());
    return;
  }
  const int64_t rows = request.rows.dim(0);
  if (rows > queue_.options().capacity) {  // would be refused however empty the queue
    *status = 400;
    *out = ErrorResponse(std::to_string(rows) + " instances: more than serve.queue_capacity (" +
                         std::to_string(queue_.options().capacity) + ")");
    return;
  }
  auto job = std::make_shared<Job>();
  job->rows = std::move(request.rows);
  std::future<JobResult> done = job->done.get_future();
  switch (queue_.Push(job)) {
    case BatchQueue::PushResult::kQueued:
      break;
    case BatchQueue::PushResult::kFull:
      *status = 503;
      *out = ErrorResponse("queue full (serve.queue_capacity = " +
                           std::to_string(queue_.options().capacity) + " instances): retry");
      return;
    case BatchQueue::PushResult::kClosed:
      *status = 503;
      *out = ErrorResponse("the server is shutting down");
      return;
  }
  const JobResult r = done.get();
  *version = std::to_string(r.version);
  if (!r.error.empty()) {
    *status = 500;
    *out = ErrorResponse("inference failed: " + r.error);
    return;
  }
  *status = 200;
  *out = PredictResponse(sig_, r.results, rows, request.columnar);
}

bool HttpServer::OtherModel(const httplib::Request& req, httplib::Response& res) const {
  if (req.matches[1] == options_.model_name) return false;
  res.status = 404;
  res.set_content(
      ErrorResponse("Could not find any versions of model " + std::string(req.matches[1])), kJson);
  return true;
}

void HttpServer::Reload(httplib::Response& res) {
  try {
    const bool switched = pool_.Reload(/*force=*/true);
    const auto snapshot = pool_.Current();
    metrics_.SetModelVersion(snapshot->version, switched);
    res.set_content("{\"version\":\"" + std::to_string(snapshot->version) +
                        "\",\"checkpoint\":" + JsonString(snapshot->checkpoint) + "}",
                    kJson);
  } catch (const std::exception& e) {
    res.status = 500;
    res.set_content(ErrorResponse(std::string("reload failed: ") + e.what()), kJson);
  }
}

void HttpServer::Routes() {
  const std::string model = R"(/v1/models/([^/:]+))";
  server_->Post(model + ":predict", [this](const httplib::Request& req, httplib::Response& res) {
    const Clock::time_point start = Clock::now();
    metrics_.RecordRequest();
    int status = 500;
    std::string body;
    std::string version;
    Predict(req.matches[1], req.body, &status, &body, &version);
    res.status = status;
    if (status == 503) res.set_header("Retry-After", "1");
    if (!version.empty()) res.set_header("X-Model-Version", version);
    res.set_content(std::move(body), kJson);
    metrics_.RecordResponse(status, SecondsSince(start));
  });
  server_->Post(model + ":reload", [this](const httplib::Request& req, httplib::Response& res) {
    if (!OtherModel(req, res)) Reload(res);
  });
  server_->Get(model, [this](const httplib::Request& req, httplib::Response& res) {
    if (!OtherModel(req, res)) res.set_content(StatusResponse(pool_.version()), kJson);
  });
  server_->Get(model + "/metadata", [this](const httplib::Request& req, httplib::Response& res) {
    if (OtherModel(req, res)) return;
    res.set_content(MetadataResponse(sig_, options_.model_name, pool_.version()), kJson);
  });
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_.Render(queue_.depth()), "text/plain; version=0.0.4");
  });
  // Statuses the library sets itself (404 no route, 413 too large, 400 bad HTTP) get a JSON
  // body too.
  server_->set_error_handler([this](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string what = StatusText(res.status);
    if (res.status == 413) {
      what = "request body exceeds serve.max_body_bytes (" +
             std::to_string(options_.max_body_bytes) + " bytes)";
      metrics_.RecordRequest();
      metrics_.RecordResponse(413, 0);
    }
    res.set_content(ErrorResponse(what), kJson);
  });
  server_->set_exception_handler(
      [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        res.status = 500;
        res.set_content(ErrorResponse(what), kJson);
      });
}

int HttpServer::Bind() {
  const int port = options_.port == 0
                       ? server_->bind_to_any_port(options_.host)
                       : (server_->bind_to_port(options_.host, options_.port) ? options_.port : -1);
  if (port < 0 || !static_cast<Server&>(*server_).RaiseBacklog(1024)) {
    throw Error(ErrorCode::kIo,
                "cannot listen on " + options_.host + ":" + std::to_string(options_.port),
                {.key = "--port", .hint = "is the port in use? --port 0 picks a free one"});
  }
  return port;
}

void HttpServer::Run() { server_->listen_after_bind(); }

void HttpServer::Stop() { server_->stop(); }

bool HttpServer::running() const { return server_->is_running(); }

}  // namespace shardflow::serve
