// shardflow-serve's listening socket, and who holds a port it could not take.
//
// The socket is bound with SO_REUSEADDR (a restarted server takes its port back at once, past
// the old connections' TIME_WAIT) and without SO_REUSEPORT unless serve.reuse_port asks for it:
// with SO_REUSEPORT a second server started on a taken port would bind too, and the kernel would
// split the connections between the two processes. A taken port is refused at start with one
// line naming it and, when /proc tells (a process of this user, or any as root), the process
// that listens on it:
//   invalid argument: port 8501 on 127.0.0.1 is in use, held by pid 4242 (shardflow-serve)
//   [key=--port] hint: ...
// Thread-safety: none; the parse phase opens it, the poller thread then owns it.
#pragma once

#include <optional>
#include <string>

namespace shardflow::serve {

class ListenSocket {
 public:
  ListenSocket() = default;
  ListenSocket(int fd, int port) : fd_(fd), port_(port) {}
  ~ListenSocket();
  ListenSocket(ListenSocket&& other) noexcept;
  ListenSocket& operator=(ListenSocket&& other) noexcept;
  ListenSocket(const ListenSocket&) = delete;
  ListenSocket& operator=(const ListenSocket&) = delete;

  int fd() const { return fd_; }
  int port() const { return port_; }  // the bound port (the one chosen for port 0)
  void Close();

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Binds `host` (an address or a name; every address it resolves to is tried in turn) at `port`
// (0: any free port) and listens with a backlog of `backlog`. The socket is non-blocking.
// Throws Error(kInvalidArgument) naming host and port: the port in use (with its holder when
// found), an address this machine does not have, a port that needs privileges.
ListenSocket OpenListenSocket(const std::string& host, int port, bool reuse_port, int backlog);

struct PortHolder {
  int pid = 0;
  std::string name;  // /proc/PID/comm
};

// The process with a TCP socket listening on `port` (IPv4 or IPv6), from /proc/net/tcp{,6}
// (the socket's inode) and /proc/*/fd (which process has that inode open). Empty when none is
// found or /proc cannot be read (another user's processes, another network namespace).
std::optional<PortHolder> FindPortHolder(int port);

}  // namespace shardflow::serve
