#include "apps/serve/connection_poller.hpp"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include "apps/serve/response_json.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::serve {
namespace {

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr size_t kReadChunk = 64 << 10;
constexpr size_t kReadPerEvent = 1 << 20;  // then other connections get their turn
constexpr auto kSweepInterval = std::chrono::milliseconds(100);

HttpResponse ErrorReply(int status, const std::string& message) {
  HttpResponse r;
  r.status = status;
  r.body = ErrorResponse(message);
  return r;
}

std::string FormatSeconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", s);
  return text;
}

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(s));
}

}  // namespace

struct ConnectionPoller::Connection {
  enum class State { kReading, kHandling, kWriting, kLingering, kClosed };

  Connection(uint64_t id_in, int fd_in, int64_t max_body_bytes)
      : id(id_in), fd(fd_in), parser(max_body_bytes) {}

  // Some byte of a request is buffered, or a request or an error waits to be acted on.
  bool InProgress() const {
    return parser.started() || in_begin < in.size() || next.has_value() || error.has_value();
  }
  bool Writing() const { return out_begin < out.size(); }

  const uint64_t id;
  const int fd;
  State state = State::kReading;
  std::string in;  // input; in[in_begin..] is not parsed yet
  size_t in_begin = 0;
  RequestParser parser;
  std::optional<HttpRequest> next;  // read, not yet given to a worker
  std::optional<HttpError> error;   // the input could not be framed
  std::string target;               // of the request held or being answered
  bool keep_alive = true;           // the client's wish for that request
  std::string out;                  // output; out[out_begin..] is not sent yet
  size_t out_begin = 0;
  bool close_after_write = false;
  bool peer_closed = false;  // read end of file
  bool continue_sent = false;
  bool touched = false;
  Clock::time_point active = Clock::now();  // the last byte read or written
  Clock::time_point linger_until;
};

ConnectionPoller::ConnectionPoller(ListenSocket socket, PollerOptions options, HttpHooks hooks)
    : listen_(std::move(socket)),
      options_(options),
      hooks_(std::move(hooks)),
      read_buffer_(kReadChunk),
      workers_(options.threads, options.max_waiting) {
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event listen_event{.events = EPOLLIN, .data = {.u64 = kListenId}};
  epoll_event wake_event{.events = EPOLLIN, .data = {.u64 = kWakeId}};
  if (epoll_fd_ < 0 || wake_fd_ < 0 ||
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_.fd(), &listen_event) != 0 ||
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake_event) != 0) {
    const std::string why = std::strerror(errno);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    if (wake_fd_ >= 0) ::close(wake_fd_);
    throw Error(ErrorCode::kIo, "http: cannot set up epoll: " + why);
  }
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  const auto limit = static_cast<size_t>(std::min<rlim_t>(files.rlim_cur, 1 << 20));
  max_connections_ = limit > 128 ? limit - 64 : limit / 2;
}

ConnectionPoller::~ConnectionPoller() {
  workers_.Close();
  workers_.Join();  // no completion arrives after this
  for (auto& [id, c] : conns_) {
    if (c->state != Connection::State::kClosed) ::close(c->fd);
  }
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

void ConnectionPoller::Stop() {
  stop_.store(true);
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void ConnectionPoller::Complete(uint64_t id, HttpResponse response) {
  {
    MutexLock lock(mu_);
    done_.emplace_back(id, std::move(response));
  }
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void ConnectionPoller::Run() {
  std::vector<epoll_event> events(256);
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), 100);
    if (n < 0 && errno != EINTR) {
      throw Error(ErrorCode::kIo, std::string("http: epoll_wait failed: ") + std::strerror(errno));
    }
    for (int i = 0; i < n; ++i)
      Handle(events[static_cast<size_t>(i)].data.u64, events[static_cast<size_t>(i)].events);
    if (stop_.load() && !draining_) BeginDrain();
    ProcessCompletions();
    RunReady();
    Sweep(Clock::now());
    EndIteration();
    if (draining_ && conns_.empty()) break;
  }
  workers_.Close();
  workers_.Join();
  SF_LOG(Info) << "http: drained, " << drain_answered_ << " responses sent while draining";
}

void ConnectionPoller::Handle(uint64_t id, uint32_t events) {
  if (id == kListenId) {
    AcceptAll();
    return;
  }
  if (id == kWakeId) return;  // ProcessCompletions reads it
  const auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Connection& c = *it->second;
  if (c.state == Connection::State::kClosed) return;
  Touch(c);
  if (c.state == Connection::State::kLingering) {
    DiscardInput(c);
    return;
  }
  if ((events & EPOLLERR) != 0) {
    Close(c);
    return;
  }
  if ((events & EPOLLOUT) != 0 && c.Writing()) Flush(c);
  if (c.state == Connection::State::kReading && (events & (EPOLLIN | EPOLLHUP)) != 0) {
    ReadInput(c);
    if (c.state == Connection::State::kReading) ready_.push_back(c.id);
  }
}

void ConnectionPoller::AcceptAll() {
  for (;;) {
    const int fd = ::accept4(listen_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) PauseAccepting();
      return;
    }
    const int yes = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    if (conns_.size() >= max_connections_) {
      RefuseConnection(fd);
      continue;
    }
    auto c = std::make_unique<Connection>(next_id_++, fd, options_.max_body_bytes);
    epoll_event event{.events = EPOLLIN | EPOLLONESHOT, .data = {.u64 = c->id}};
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
      ::close(fd);
      continue;
    }
    conns_.emplace(c->id, std::move(c));
  }
}

// Out of file descriptors (or kernel memory): the listening socket stays readable, so stop
// watching it for a moment rather than spin; the pending connections wait in its backlog.
void ConnectionPoller::PauseAccepting() {
  if (!accept_paused_until_) {
    SF_LOG(Warn) << "http: cannot accept connections (" << std::strerror(errno) << ", "
                 << conns_.size() << " open): pausing 100 ms";
  }
  accept_paused_until_ = Clock::now() + std::chrono::milliseconds(100);
  epoll_event event{.events = 0, .data = {.u64 = kListenId}};
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_.fd(), &event);
}

void ConnectionPoller::RefuseConnection(int fd) {
  HttpResponse r = ErrorReply(503, "too many open connections (" + std::to_string(conns_.size()) +
                                       ", the open-file limit less 64): retry");
  r.headers.emplace_back("Retry-After", "1");
  const std::string bytes = SerializeResponse(r, /*keep_alive=*/false);
  [[maybe_unused]] const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  ::shutdown(fd, SHUT_WR);
  ::close(fd);
  if (hooks_.sent) hooks_.sent("", 503, false);
}

void ConnectionPoller::ReadInput(Connection& c) {
  for (size_t total = 0; total < kReadPerEvent;) {
    const ssize_t n = ::recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n > 0) {
      c.in.append(read_buffer_.data(), static_cast<size_t>(n));
      total += static_cast<size_t>(n);
      c.active = Clock::now();
    } else if (n == 0) {
      c.peer_closed = true;
      return;
    } else if (errno != EINTR) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) Close(c);  // reset by the client
      return;
    }
  }
}

void ConnectionPoller::DiscardInput(Connection& c) {
  for (size_t total = 0; total < kReadPerEvent;) {
    const ssize_t n = ::recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
    if (n > 0) {
      total += static_cast<size_t>(n);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
      Close(c);
      return;
    } else if (errno != EINTR) {
      return;
    }
  }
}

void ConnectionPoller::ParseBuffered(Connection& c) {
  if (c.next || c.error) return;
  size_t consumed = 0;
  const RequestParser::Status s =
      c.parser.Feed(std::string_view(c.in).substr(c.in_begin), &consumed);
  c.in_begin += consumed;
  if (c.in_begin == c.in.size()) {
    c.in.clear();
    c.in_begin = 0;
  } else if (c.in_begin > kReadChunk) {
    c.in.erase(0, c.in_begin);
    c.in_begin = 0;
  }
  if (s == RequestParser::Status::kComplete) c.next = c.parser.TakeRequest();
  if (s == RequestParser::Status::kError) c.error = c.parser.error();
}

// A connection in kReading: answers what its input holds, or waits for more.
void ConnectionPoller::Advance(Connection& c) {
  ParseBuffered(c);
  if (c.next) {
    HttpRequest request = std::move(*c.next);
    c.next.reset();
    Dispatch(c, std::move(request));
    return;
  }
  if (c.error) {
    c.target = c.parser.target();
    c.keep_alive = false;
    HttpResponse r = ErrorReply(c.error->status, c.error->message);
    r.close = true;
    Respond(c, std::move(r), /*handled=*/false);
    return;
  }
  if (c.parser.expects_continue() && !c.continue_sent) {
    c.continue_sent = true;
    Send(c, "HTTP/1.1 100 Continue\r\n\r\n");
  }
  if (draining_ && !c.peer_closed && !c.InProgress()) {
    // What the client sent while its last request was answered is still in the socket.
    ReadInput(c);
    if (c.state == Connection::State::kClosed) return;
    ParseBuffered(c);
    if (c.InProgress()) {
      ready_.push_back(c.id);
      return;
    }
  }
  // End of file before a whole request, or an idle connection of a draining server.
  if (c.peer_closed || (draining_ && !c.InProgress())) Close(c);
}

void ConnectionPoller::Dispatch(Connection& c, HttpRequest request) {
  c.state = Connection::State::kHandling;
  c.keep_alive = request.keep_alive;
  c.target = request.target;
  c.continue_sent = false;
  auto held = std::make_shared<const HttpRequest>(std::move(request));
  const uint64_t id = c.id;
  const bool queued = workers_.TryRun([this, id, held] {
    HttpResponse response;
    try {
      response = hooks_.handle(*held);
    } catch (const std::exception& e) {
      response = ErrorReply(500, std::string("internal error: ") + e.what());
    }
    Complete(id, std::move(response));
  });
  if (queued) return;
  HttpResponse busy = ErrorReply(503, "server busy: all " + std::to_string(workers_.threads()) +
                                          " HTTP threads are answering requests and " +
                                          std::to_string(workers_.max_waiting()) +
                                          " more wait (serve.http_threads): retry");
  busy.headers.emplace_back("Retry-After", "1");
  Respond(c, std::move(busy), /*handled=*/false);
}

void ConnectionPoller::Respond(Connection& c, HttpResponse response, bool handled) {
  if (hooks_.sent) hooks_.sent(c.target, response.status, handled);
  bool keep = c.keep_alive && !response.close;
  // Draining, or the client sent all it will: the connection stays open only for a request
  // already read.
  if (keep && (draining_ || c.peer_closed)) {
    if (!c.peer_closed) ReadInput(c);  // a request sent while this one was answered
    if (c.state == Connection::State::kClosed) return;
    ParseBuffered(c);
    keep = c.next.has_value();
  }
  if (draining_) ++drain_answered_;
  c.close_after_write = !keep;
  c.state = Connection::State::kWriting;
  Send(c, SerializeResponse(response, keep));
}

void ConnectionPoller::Send(Connection& c, std::string bytes) {
  if (c.out.empty()) {
    c.out = std::move(bytes);
  } else {
    c.out += bytes;
  }
  Flush(c);
}

void ConnectionPoller::Flush(Connection& c) {
  while (c.Writing()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + c.out_begin, c.out.size() - c.out_begin, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_begin += static_cast<size_t>(n);
      c.active = Clock::now();
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;  // armed for EPOLLOUT
    } else if (n < 0 && errno != EINTR) {
      Close(c);
      return;
    }
  }
  c.out.clear();
  c.out_begin = 0;
  if (c.state != Connection::State::kWriting) return;
  if (c.close_after_write) {
    StartLinger(c);
  } else {
    c.state = Connection::State::kReading;
    ready_.push_back(c.id);
  }
}

// After the last response: no more output, and the input the client may still send is read
// and dropped for linger_seconds, so that closing does not reset the connection before the
// client has read the response.
void ConnectionPoller::StartLinger(Connection& c) {
  ::shutdown(c.fd, SHUT_WR);
  if (c.peer_closed) {
    Close(c);
    return;
  }
  c.state = Connection::State::kLingering;
  c.linger_until = Clock::now() + Seconds(options_.linger_seconds);
  if (draining_) c.linger_until = std::min(c.linger_until, drain_deadline_);
}

void ConnectionPoller::Close(Connection& c) {
  if (c.state == Connection::State::kClosed) return;
  ::close(c.fd);  // also leaves the epoll set
  c.state = Connection::State::kClosed;
  closed_.push_back(c.id);
}

void ConnectionPoller::Touch(Connection& c) {
  if (c.touched) return;
  c.touched = true;
  touched_.push_back(&c);
}

void ConnectionPoller::Arm(Connection& c) {
  uint32_t events = 0;
  switch (c.state) {
    case Connection::State::kReading:
      events = EPOLLIN | (c.Writing() ? EPOLLOUT : 0u);
      break;
    case Connection::State::kWriting:
      events = EPOLLOUT;
      break;
    case Connection::State::kLingering:
      events = EPOLLIN;
      break;
    case Connection::State::kHandling:  // a worker holds its request: nothing to watch
    case Connection::State::kClosed:
      return;
  }
  epoll_event event{.events = events | EPOLLONESHOT, .data = {.u64 = c.id}};
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &event) != 0) Close(c);
}

void ConnectionPoller::BeginDrain() {
  draining_ = true;
  drain_deadline_ = Clock::now() + Seconds(options_.drain_seconds);
  if (listen_.fd() >= 0) {
    AcceptAll();  // connections the kernel completed: their requests may be on the way
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_.fd(), nullptr);
    listen_.Close();
  }
  size_t busy = 0;
  for (auto& [id, c] : conns_) {
    Touch(*c);
    if (c->state == Connection::State::kReading) {
      ReadInput(*c);
      if (c->state == Connection::State::kReading) ready_.push_back(id);
    } else {
      ++busy;
    }
  }
  SF_LOG(Info) << "http: draining " << conns_.size() << " connections (" << busy
               << " with a request in hand), at most " << options_.drain_seconds << " s";
}

void ConnectionPoller::ProcessCompletions() {
  uint64_t count = 0;
  [[maybe_unused]] const ssize_t n = ::read(wake_fd_, &count, sizeof count);
  std::vector<std::pair<uint64_t, HttpResponse>> done;
  {
    MutexLock lock(mu_);
    done.swap(done_);
  }
  // A response the stop's queue flush produced (run.cpp: http.Stop() before queue.Flush()) is
  // in `done` only after stop_ was set: drain first, so it goes out with Connection: close.
  if (stop_.load() && !draining_) BeginDrain();
  for (auto& [id, response] : done) {
    const auto it = conns_.find(id);
    if (it == conns_.end() || it->second->state != Connection::State::kHandling) continue;
    Touch(*it->second);
    Respond(*it->second, std::move(response), /*handled=*/true);
  }
}

void ConnectionPoller::RunReady() {
  while (!ready_.empty()) {
    std::vector<uint64_t> ids;
    ids.swap(ready_);
    for (const uint64_t id : ids) {
      const auto it = conns_.find(id);
      if (it == conns_.end() || it->second->state != Connection::State::kReading) continue;
      Touch(*it->second);
      Advance(*it->second);
    }
  }
}

void ConnectionPoller::Sweep(Clock::time_point now) {
  if (now < next_sweep_) return;
  next_sweep_ = now + kSweepInterval;
  if (accept_paused_until_ && now >= *accept_paused_until_ && listen_.fd() >= 0) {
    accept_paused_until_.reset();
    epoll_event event{.events = EPOLLIN, .data = {.u64 = kListenId}};
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_.fd(), &event);
  }
  const bool cut = draining_ && now >= drain_deadline_;
  const auto idle = Seconds(options_.idle_timeout_seconds);
  size_t cut_count = 0;
  for (auto& [id, c] : conns_) {
    using State = Connection::State;
    if (c->state == State::kClosed) continue;
    const bool timed_out = options_.idle_timeout_seconds > 0 && now - c->active > idle;
    if (cut) {
      ++cut_count;
      Close(*c);
    } else if (c->state == State::kLingering && now >= c->linger_until) {
      Close(*c);
    } else if (c->state == State::kWriting && timed_out) {
      Close(*c);  // the client does not read its response
    } else if (c->state == State::kReading && timed_out && !c->Writing()) {
      if (!c->InProgress()) {
        Close(*c);
        continue;
      }
      Touch(*c);
      c->target = c->parser.target();
      c->keep_alive = false;
      Respond(*c,
              ErrorReply(408, "request not finished within serve.idle_timeout_seconds (" +
                                  FormatSeconds(options_.idle_timeout_seconds) + ")"),
              /*handled=*/false);
    }
  }
  if (cut_count > 0) {
    SF_LOG(Warn) << "http: drain took over " << FormatSeconds(options_.drain_seconds) << ": closed "
                 << cut_count << " connections still open";
  }
}

void ConnectionPoller::EndIteration() {
  for (Connection* c : touched_) {
    c->touched = false;
    Arm(*c);
  }
  touched_.clear();
  for (const uint64_t id : closed_) conns_.erase(id);
  closed_.clear();
}

}  // namespace shardflow::serve
