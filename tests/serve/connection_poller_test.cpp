// ConnectionPoller over loopback sockets, with handlers that answer at once or wait at a gate:
// idle keep-alive connections hold no worker thread (more of them than threads, and a new
// client is still answered at once); a request that finds every thread busy and the waiting
// list full gets 503 + Retry-After at once; pipelined requests are answered in order; a request
// that cannot be framed gets its error and the connection closes; idle and unfinished requests
// time out; Expect: 100-continue; the drain after Stop() answers every request read (held,
// waiting, or sent just before Stop) with "Connection: close" and closes idle connections.
// WorkerPool: the bound on waiting tasks. scripts/tsan_tests.sh runs these suites under
// ThreadSanitizer.
#include "apps/serve/connection_poller.hpp"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "core/thread_annotations.hpp"

namespace shardflow::serve {
namespace connection_poller_test {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

struct Reply {
  int status = -1;  // -1: end of file or time out before a whole response
  std::string head;
  std::string body;
  bool Closes() const { return head.find("Connection: close\r\n") != std::string::npos; }
};

// A blocking loopback client that reads responses framed by Content-Length.
class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return connected_; }
  void Send(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // Whether a byte (or end of file) arrives within `timeout`.
  bool Readable(milliseconds timeout) {
    if (!buffer_.empty()) return true;
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }
  Reply Read(milliseconds timeout = milliseconds(5000)) {
    Reply r;
    size_t end = 0;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(timeout)) return r;
    }
    r.head = buffer_.substr(0, end + 4);
    size_t length = 0;
    if (const size_t at = r.head.find("Content-Length: "); at != std::string::npos) {
      length = std::stoul(r.head.substr(at + 16));
    }
    while (buffer_.size() < end + 4 + length) {
      if (!Fill(timeout)) return r;
    }
    r.body = buffer_.substr(end + 4, length);
    buffer_.erase(0, end + 4 + length);
    r.status = std::stoi(r.head.substr(9, 3));
    return r;
  }
  // Whether the server closes the connection (end of file or reset) within `timeout`.
  bool ClosedWithin(milliseconds timeout) {
    if (!Readable(timeout)) return false;
    char c = 0;
    return ::recv(fd_, &c, 1, 0) <= 0;
  }

 private:
  bool Fill(milliseconds timeout) {
    if (!Readable(timeout)) return false;
    char chunk[4096];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buffer_;
};

std::string Get(const std::string& path) { return "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n"; }

// Handlers wait here until Open().
class Gate {
 public:
  void Wait() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    ++waiting_;
    cv_.NotifyAll();
    while (!open_) cv_.Wait(mu_);
  }
  void Open() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    open_ = true;
    cv_.NotifyAll();
  }
  // Blocks until `n` handlers wait (at most 5 s); returns how many do.
  int AwaitWaiting(int n) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    const auto deadline = SteadyClock::now() + std::chrono::seconds(5);
    while (waiting_ < n && SteadyClock::now() < deadline) cv_.WaitFor(mu_, milliseconds(10));
    return waiting_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int waiting_ GUARDED_BY(mu_) = 0;
  bool open_ GUARDED_BY(mu_) = false;
};

HttpResponse Echo(const HttpRequest& req) {
  HttpResponse r;
  r.body = req.path + " " + std::to_string(req.body.size());
  return r;
}

// Options with a short linger: these clients keep their sockets open after "Connection: close".
PollerOptions Options(int threads, int max_waiting, double idle_timeout_seconds = 60) {
  return PollerOptions{.threads = threads,
                       .max_waiting = max_waiting,
                       .idle_timeout_seconds = idle_timeout_seconds,
                       .linger_seconds = 0.2};
}

// A poller on a free loopback port, run on its own thread.
class TestServer {
 public:
  TestServer(PollerOptions options, std::function<HttpResponse(const HttpRequest&)> handle) {
    ListenSocket socket = OpenListenSocket("127.0.0.1", 0, false, 64);
    port_ = socket.port();
    HttpHooks hooks{.handle = std::move(handle),
                    .sent = [this](const std::string&, int status, bool) { Count(status); }};
    poller_ = std::make_unique<ConnectionPoller>(std::move(socket), options, std::move(hooks));
    thread_ = std::thread([this] { poller_->Run(); });
  }
  ~TestServer() { StopAndJoin(); }

  int port() const { return port_; }
  void Stop() { poller_->Stop(); }
  void StopAndJoin() {
    if (!thread_.joinable()) return;
    poller_->Stop();
    thread_.join();
  }
  int sent(int status) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return sent_[status];
  }

 private:
  void Count(int status) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    ++sent_[status];
  }

  int port_ = 0;
  std::unique_ptr<ConnectionPoller> poller_;
  std::thread thread_;
  Mutex mu_;
  std::map<int, int> sent_ GUARDED_BY(mu_);
};

TEST(ConnectionPollerThreads, IdleKeepAliveConnectionsHoldNoThread) {
  TestServer server(Options(2, 2), Echo);
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 10; ++i) {  // five times the threads, each answered, then idle
    idle.push_back(std::make_unique<Client>(server.port()));
    idle.back()->Send(Get("/idle"));
    ASSERT_EQ(idle.back()->Read().status, 200) << i;
  }
  Client fresh(server.port());
  const auto start = SteadyClock::now();
  fresh.Send(Get("/fresh"));
  const Reply r = fresh.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "/fresh 0");
  EXPECT_LT(SteadyClock::now() - start, milliseconds(1000));
  for (auto& c : idle) {  // and the idle ones are still served
    c->Send(Get("/again"));
    EXPECT_EQ(c->Read().status, 200);
  }
}

TEST(ConnectionPollerThreads, BusyServerAnswers503AtOnce) {
  Gate gate;
  TestServer server(Options(2, 1), [&gate](const HttpRequest& req) {
    gate.Wait();
    return Echo(req);
  });
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 4; ++i) {  // 2 held, 1 waiting, 1 refused
    clients.push_back(std::make_unique<Client>(server.port()));
    clients.back()->Send(Get(std::string("/") += std::to_string(i)));
    if (i < 2) {
      ASSERT_EQ(gate.AwaitWaiting(i + 1), i + 1);
    }
  }
  ASSERT_TRUE(clients[3]->Readable(milliseconds(2000)));
  const Reply busy = clients[3]->Read();
  EXPECT_EQ(busy.status, 503);
  EXPECT_NE(busy.head.find("Retry-After: 1\r\n"), std::string::npos);
  EXPECT_NE(busy.body.find("all 2 HTTP threads are answering requests and 1 more wait"),
            std::string::npos)
      << busy.body;
  EXPECT_FALSE(clients[2]->Readable(milliseconds(50)));  // waits for a thread
  gate.Open();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(clients[static_cast<size_t>(i)]->Read().status, 200);
  clients[3]->Send(Get("/retry"));  // the refused connection stays open
  EXPECT_EQ(clients[3]->Read().status, 200);
}

TEST(ConnectionPollerThreads, PipelinedRequestsAreAnsweredInOrder) {
  TestServer server(Options(4, 4), Echo);
  Client c(server.port());
  c.Send(Get("/1") + "POST /2 HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc" + Get("/3"));
  EXPECT_EQ(c.Read().body, "/1 0");
  EXPECT_EQ(c.Read().body, "/2 3");
  EXPECT_EQ(c.Read().body, "/3 0");
}

TEST(ConnectionPollerThreads, UnframableRequestGetsItsErrorAndTheConnectionCloses) {
  TestServer server(Options(2, 2), Echo);
  Client c(server.port());
  c.Send("POST /v1/models/m:predict HTTP/1.1\r\nContent-Length: abc\r\n\r\n{}");
  const Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(r.Closes());
  EXPECT_NE(r.body.find("bad Content-Length header"), std::string::npos) << r.body;
  EXPECT_TRUE(c.ClosedWithin(milliseconds(3000)));
  Client big(server.port());
  big.Send("POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n");
  EXPECT_EQ(big.Read().status, 413);
  server.StopAndJoin();
  EXPECT_EQ(server.sent(400), 1);
  EXPECT_EQ(server.sent(413), 1);
}

TEST(ConnectionPollerThreads, IdleConnectionsAndUnfinishedRequestsTimeOut) {
  TestServer server(Options(2, 2, 0.2), Echo);
  Client idle(server.port());
  idle.Send(Get("/a"));
  EXPECT_EQ(idle.Read().status, 200);
  Client slow(server.port());
  slow.Send("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc");
  EXPECT_TRUE(idle.ClosedWithin(milliseconds(3000)));
  const Reply r = slow.Read();
  EXPECT_EQ(r.status, 408);
  EXPECT_TRUE(r.Closes());
}

TEST(ConnectionPollerThreads, ExpectContinueGetsContinueBeforeTheBody) {
  TestServer server(Options(2, 2), Echo);
  Client c(server.port());
  c.Send("POST /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n");
  EXPECT_EQ(c.Read().status, 100);
  c.Send("abcd");
  EXPECT_EQ(c.Read().body, "/x 4");
}

TEST(ConnectionPollerThreads, LargeBodyArrivesWhole) {
  TestServer server(Options(2, 2), Echo);
  Client c(server.port());
  const std::string body(3 << 20, 'x');
  std::thread sender([&] {
    c.Send("POST /big HTTP/1.1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
           body);
  });
  EXPECT_EQ(c.Read().body, "/big " + std::to_string(body.size()));
  sender.join();
}

TEST(ConnectionPollerThreads, DrainAnswersEveryRequestReadAndClosesIdleConnections) {
  Gate gate;
  TestServer server(Options(2, 4), [&gate](const HttpRequest& req) {
    if (req.path != "/quick") gate.Wait();
    return Echo(req);
  });
  Client idle(server.port());
  idle.Send(Get("/quick"));
  ASSERT_EQ(idle.Read().status, 200);
  std::vector<std::unique_ptr<Client>> busy;
  for (int i = 0; i < 3; ++i) {  // two held by the workers, one waiting for a thread
    busy.push_back(std::make_unique<Client>(server.port()));
    busy.back()->Send(Get("/held"));
  }
  ASSERT_EQ(gate.AwaitWaiting(2), 2);
  Client late(server.port());  // sent just before the stop: read by the drain
  late.Send(Get("/late"));
  server.Stop();
  EXPECT_TRUE(idle.ClosedWithin(milliseconds(3000)));
  // Sent after the stop, before its connection's first answer (no "Connection: close" yet):
  // still in the socket when that answer goes, and answered too.
  busy[0]->Send(Get("/second"));
  gate.Open();
  const Reply first = busy[0]->Read();
  EXPECT_EQ(first.status, 200);
  EXPECT_FALSE(first.Closes()) << first.head;
  const Reply second = busy[0]->Read();
  EXPECT_EQ(second.body, "/second 0");
  EXPECT_TRUE(second.Closes()) << second.head;
  for (size_t i = 1; i < busy.size(); ++i) {
    const Reply r = busy[i]->Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.Closes()) << r.head;
  }
  const Reply r = late.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.Closes());
  server.StopAndJoin();
  EXPECT_FALSE(Client(server.port()).connected());  // no longer listening
}

TEST(WorkerPoolThreads, RefusesBeyondThreadsPlusWaitingAndRunsWhatItAccepted) {
  Gate gate;
  std::atomic<int> ran{0};
  WorkerPool pool(2, 1);
  const auto task = [&] {
    gate.Wait();
    ran.fetch_add(1);
  };
  EXPECT_TRUE(pool.TryRun(task));
  EXPECT_TRUE(pool.TryRun(task));
  ASSERT_EQ(gate.AwaitWaiting(2), 2);
  EXPECT_TRUE(pool.TryRun(task));
  EXPECT_FALSE(pool.TryRun(task));
  EXPECT_EQ(pool.in_flight(), 3);
  pool.Close();
  EXPECT_FALSE(pool.TryRun(task));
  gate.Open();
  pool.Join();
  EXPECT_EQ(ran.load(), 3);
}

}  // namespace connection_poller_test
}  // namespace shardflow::serve
