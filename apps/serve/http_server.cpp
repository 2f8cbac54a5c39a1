#include "apps/serve/http_server.hpp"

#include "apps/serve/request_json.hpp"
#include "apps/serve/response_json.hpp"
#include "core/error.hpp"

namespace shardflow::serve {
namespace {

constexpr const char* kRoutes =
    "the routes are /v1/models/NAME[:predict|:reload|/metadata] and /metrics";

HttpResponse Json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse Fail(int status, const std::string& message) {
  return Json(status, ErrorResponse(message));
}

HttpResponse NotAllowed(const HttpRequest& req, const char* allowed) {
  HttpResponse r =
      Fail(405, "method " + req.method + " not allowed on " + req.path + ": use " + allowed);
  r.headers.emplace_back("Allow", allowed);
  return r;
}

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Whether a reload failed because of the checkpoint (the client's to fix: 400) rather than
// the server (500).
bool CheckpointFault(const Error& e) {
  return e.code() == ErrorCode::kInvalidArgument || e.code() == ErrorCode::kNotFound ||
         e.code() == ErrorCode::kDataLoss;
}

}  // namespace

HttpServer::HttpServer(ListenSocket socket, HttpOptions options, const Signature& sig,
                       BatchQueue& queue, ModelPool& pool, ServeMetrics& metrics)
    : options_(std::move(options)),
      port_(socket.port()),
      sig_(sig),
      queue_(queue),
      pool_(pool),
      metrics_(metrics) {
  HttpHooks hooks;
  hooks.handle = [this](const HttpRequest& req) { return Handle(req); };
  hooks.sent = [this](const std::string& target, int status, bool handled) {
    Sent(target, status, handled);
  };
  poller_ = std::make_unique<ConnectionPoller>(
      std::move(socket),
      PollerOptions{.threads = options_.threads,
                    .max_waiting = options_.threads,
                    .max_body_bytes = options_.max_body_bytes,
                    .idle_timeout_seconds = options_.idle_timeout_seconds},
      std::move(hooks));
}

HttpServer::~HttpServer() = default;

void HttpServer::Run() { poller_->Run(); }

void HttpServer::Stop() { poller_->Stop(); }

void HttpServer::Sent(const std::string& target, int status, bool handled) {
  metrics_.RecordHttpResponse(status);
  // A predict request the poller refused itself (413, 503, a malformed one) counts among the
  // predict responses too; the ones answered by Predict() are counted there, with latency.
  if (!handled && target.find(":predict") != std::string::npos) {
    metrics_.RecordRequest();
    metrics_.RecordResponse(status, 0);
  }
}

HttpResponse HttpServer::Handle(const HttpRequest& req) {
  const std::string& path = req.path;
  if (path == "/metrics") {
    if (req.method != "GET") return NotAllowed(req, "GET");
    HttpResponse r = Json(200, metrics_.Render(queue_.depth()));
    r.content_type = "text/plain; version=0.0.4";
    return r;
  }
  const std::string prefix = "/v1/models/";
  if (path.rfind(prefix, 0) == 0) {
    const size_t cut = path.find_first_of("/:", prefix.size());
    const std::string name = path.substr(prefix.size(), cut - prefix.size());
    const std::string tail = cut == std::string::npos ? "" : path.substr(cut);
    const bool get = tail.empty() || tail == "/metadata";
    const bool post = tail == ":predict" || tail == ":reload";
    if (!name.empty() && (get || post)) {
      if (req.method != (get ? "GET" : "POST")) return NotAllowed(req, get ? "GET" : "POST");
      if (tail == ":predict") return Predict(name, req.body);
      if (name != options_.model_name) return OtherModel(name);
      if (tail == ":reload") return Reload();
      if (tail.empty()) return Json(200, StatusResponse(pool_.version()));
      return Json(200, MetadataResponse(sig_, options_.model_name, pool_.version()));
    }
  }
  return Fail(404, "not found: " + path + ": " + kRoutes);
}

HttpResponse HttpServer::OtherModel(const std::string& name) const {
  return Fail(404, "Could not find any versions of model " + name);
}

HttpResponse HttpServer::Predict(const std::string& name, const std::string& body) {
  const Clock::time_point start = Clock::now();
  metrics_.RecordRequest();
  HttpResponse r = [&]() -> HttpResponse {
    if (name != options_.model_name) {
      return Fail(404, "Servable not found for request: Latest(" + name + ")");
    }
    ParsedRequest request;
    try {
      request = ParsePredictRequest(body, sig_);
    } catch (const RequestError& e) {
      return Fail(400, e.what());
    }
    const int64_t rows = request.rows.dim(0);
    if (rows > queue_.options().capacity) {  // would be refused however empty the queue
      return Fail(400, std::to_string(rows) + " instances: more than serve.queue_capacity (" +
                           std::to_string(queue_.options().capacity) + ")");
    }
    auto job = std::make_shared<Job>();
    job->rows = std::move(request.rows);
    std::future<JobResult> done = job->done.get_future();
    switch (queue_.Push(job)) {
      case BatchQueue::PushResult::kQueued:
        break;
      case BatchQueue::PushResult::kFull:
        return Fail(503, "queue full (serve.queue_capacity = " +
                             std::to_string(queue_.options().capacity) + " instances): retry");
      case BatchQueue::PushResult::kClosed:
        return Fail(503, "the server is shutting down");
    }
    const JobResult result = done.get();
    HttpResponse ok = result.error.empty()
                          ? Json(200, PredictResponse(sig_, result.results, rows, request.columnar))
                          : Fail(500, "inference failed: " + result.error);
    ok.headers.emplace_back("X-Model-Version", std::to_string(result.version));
    return ok;
  }();
  if (r.status == 503) r.headers.emplace_back("Retry-After", "1");
  metrics_.RecordResponse(r.status, SecondsSince(start));
  return r;
}

HttpResponse HttpServer::Reload() {
  try {
    const bool switched = pool_.Reload(/*force=*/true);
    const auto snapshot = pool_.Current();
    metrics_.SetModelVersion(snapshot->version, switched);
    return Json(200, "{\"version\":\"" + std::to_string(snapshot->version) +
                         "\",\"checkpoint\":" + JsonString(snapshot->checkpoint) + "}");
  } catch (const Error& e) {
    return Fail(CheckpointFault(e) ? 400 : 500, "reload failed, still serving version " +
                                                    std::to_string(pool_.version()) + ": " +
                                                    e.what());
  } catch (const std::exception& e) {
    return Fail(500, "reload failed, still serving version " + std::to_string(pool_.version()) +
                         ": " + e.what());
  }
}

}  // namespace shardflow::serve
