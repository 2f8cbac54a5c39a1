// shardflow-serve's connections: one epoll thread reads and writes every connection, and hands
// whole requests to the HTTP worker threads (http_workers.hpp).
//
// Words: a connection is *idle* when no byte of a request is buffered; a request is *read* when
// its last byte is; a worker *holds* a request from the moment it takes it to its response.
// The poller thread accepts connections, reads what they send (non-blocking), parses requests
// (http_message.hpp) and gives each request read to a worker; the worker's response comes back
// to the poller, which writes it and returns the connection to reading. So an idle keep-alive
// connection holds no thread (any number of them wait in epoll), and a client that sends its
// request slowly holds none either. Requests on one connection are answered in order, one at a
// time (pipelined ones wait in the connection's buffer).
// Refusals, at once, never silence:
//   a request read while every worker holds one and options.max_waiting more wait: 503 +
//   Retry-After: 1 (the connection stays open); more connections than the open-file limit
//   allows (RLIMIT_NOFILE less 64): 503 and close; a request that cannot be framed: its 4xx/5xx
//   and close (http_message.hpp); a request begun and not finished within idle_timeout: 408.
// Idle connections are closed after idle_timeout_seconds (0: never). A response with
// "Connection: close" is followed by a half-close and a short linger that discards what the
// client still sends, so the client reads the response rather than a reset.
// Stop() starts the drain: the listening socket's pending connections are accepted and the
// socket closed; every connection's readable input is read; every request read (and any read
// later from a request already begun) is answered, the last response on a connection with
// "Connection: close"; idle connections are closed. Run() returns once every connection is
// closed, or drain_seconds after Stop() (connections still open then are cut and counted), and
// after the workers finished.
// Thread-safety: Stop() from any thread; Run() on one thread, once. The hooks' handle() runs on
// the worker threads, sent() on the poller thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "apps/serve/http_message.hpp"
#include "apps/serve/http_workers.hpp"
#include "apps/serve/listen_socket.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::serve {

struct PollerOptions {
  int threads = 64;      // worker threads (serve.http_threads)
  int max_waiting = 64;  // requests read that may wait for a worker; beyond: 503
  int64_t max_body_bytes = 16 << 20;
  double idle_timeout_seconds = 60;  // 0: idle connections stay open
  double drain_seconds = 10;         // the longest Run() answers after Stop()
  double linger_seconds = 2;         // discarding input after "Connection: close"
};

struct HttpHooks {
  // Answers one request, on a worker thread; an exception becomes a 500 naming it.
  std::function<HttpResponse(const HttpRequest&)> handle;
  // Told of every response sent: the request's target ("" when unknown), the status, and
  // whether handle() made it (false: the poller refused the request itself).
  std::function<void(const std::string& target, int status, bool handled)> sent;
};

class ConnectionPoller {
 public:
  // Throws Error(kIo) when epoll or eventfd cannot be created.
  ConnectionPoller(ListenSocket socket, PollerOptions options, HttpHooks hooks);
  ~ConnectionPoller();
  ConnectionPoller(const ConnectionPoller&) = delete;
  ConnectionPoller& operator=(const ConnectionPoller&) = delete;

  // Serves until Stop() and the drain's end (see above). Throws Error(kIo) when epoll fails.
  void Run();
  void Stop();

  const PollerOptions& options() const { return options_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Connection;

  void Handle(uint64_t id, uint32_t events);
  void AcceptAll();
  void PauseAccepting();
  void RefuseConnection(int fd);
  void ReadInput(Connection& c);
  void DiscardInput(Connection& c);
  void ParseBuffered(Connection& c);
  void Advance(Connection& c);
  void Dispatch(Connection& c, HttpRequest request);
  void Respond(Connection& c, HttpResponse response, bool handled);
  void Send(Connection& c, std::string bytes);
  void Flush(Connection& c);
  void StartLinger(Connection& c);
  void Close(Connection& c);
  void Touch(Connection& c);
  void Arm(Connection& c);
  void BeginDrain();
  void ProcessCompletions() EXCLUDES(mu_);
  void RunReady();
  void Sweep(Clock::time_point now);
  void EndIteration();
  // On a worker thread: hands a response back to the poller.
  void Complete(uint64_t id, HttpResponse response) EXCLUDES(mu_);

  ListenSocket listen_;
  const PollerOptions options_;
  const HttpHooks hooks_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: a completion or Stop()
  size_t max_connections_ = 0;
  std::atomic<bool> stop_{false};

  // The poller thread's alone.
  std::unordered_map<uint64_t, std::unique_ptr<Connection>> conns_;
  uint64_t next_id_ = 2;              // 0: the listening socket, 1: the eventfd
  std::vector<uint64_t> ready_;       // connections whose buffered input is to be looked at
  std::vector<Connection*> touched_;  // to re-arm at the end of the iteration
  std::vector<uint64_t> closed_;      // to erase at the end of the iteration
  std::vector<char> read_buffer_;
  bool draining_ = false;
  Clock::time_point drain_deadline_;
  Clock::time_point next_sweep_;
  std::optional<Clock::time_point> accept_paused_until_;
  int64_t drain_answered_ = 0;

  Mutex mu_;
  std::vector<std::pair<uint64_t, HttpResponse>> done_ GUARDED_BY(mu_);

  WorkerPool workers_;  // last: its threads end before the members they use
};

}  // namespace shardflow::serve
