#include "apps/serve/listen_socket.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include <netinet/in.h>

#include "core/error.hpp"

namespace shardflow::serve {
namespace {

// The inodes of the sockets listening on `port` in one of /proc/net/tcp and tcp6. A line:
//   sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
// with local_address HEXADDR:HEXPORT and st 0A for LISTEN.
void ListeningInodes(const char* table, int port, std::set<std::string>* inodes) {
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // the column names
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string sl, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
    if (!(fields >> sl >> local >> remote >> state >> queues >> timer >> retransmits >> uid >>
          timeout >> inode)) {
      continue;
    }
    const size_t colon = local.rfind(':');
    if (state != "0A" || colon == std::string::npos || inode == "0") continue;
    if (std::strtol(local.c_str() + colon + 1, nullptr, 16) == port) inodes->insert(inode);
  }
}

std::string ReadComm(const std::string& pid) {
  std::ifstream in("/proc/" + pid + "/comm");
  std::string name;
  std::getline(in, name);
  return name;
}

// "in use, held by pid N (name)" or "in use".
std::string InUse(int port) {
  const std::optional<PortHolder> holder = FindPortHolder(port);
  if (!holder) return "in use";
  return "in use, held by pid " + std::to_string(holder->pid) + " (" + holder->name + ")";
}

[[noreturn]] void Refuse(const std::string& host, int port, int error, bool reuse_port) {
  const std::string where = host + ":" + std::to_string(port);
  if (error == EADDRINUSE) {
    throw Error(ErrorCode::kInvalidArgument,
                "port " + std::to_string(port) + " on " + host + " is " + InUse(port),
                {.key = "--port",
                 .hint = std::string("stop that server or choose another --port (0 picks a free "
                                     "one)") +
                         (reuse_port ? "; serve.reuse_port shares a port only among sockets "
                                       "that all set it"
                                     : "")});
  }
  if (error == EACCES) {
    throw Error(
        ErrorCode::kInvalidArgument, "cannot listen on " + where + ": permission denied",
        {.key = "--port", .hint = "ports below 1024 need privileges: choose a higher --port"});
  }
  throw Error(ErrorCode::kInvalidArgument,
              "cannot listen on " + where + ": " + std::strerror(error),
              {.key = "--host", .hint = "an address of this machine (127.0.0.1, 0.0.0.0, ::)"});
}

}  // namespace

ListenSocket::~ListenSocket() { Close(); }

ListenSocket::ListenSocket(ListenSocket&& other) noexcept : fd_(other.fd_), port_(other.port_) {
  other.fd_ = -1;
}

ListenSocket& ListenSocket::operator=(ListenSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    port_ = other.port_;
    other.fd_ = -1;
  }
  return *this;
}

void ListenSocket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::optional<PortHolder> FindPortHolder(int port) {
  std::set<std::string> inodes;
  ListeningInodes("/proc/net/tcp", port, &inodes);
  ListeningInodes("/proc/net/tcp6", port, &inodes);
  if (inodes.empty()) return std::nullopt;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return std::nullopt;
  std::optional<PortHolder> found;
  while (const dirent* entry = ::readdir(proc)) {
    const std::string pid = entry->d_name;
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string fd_dir = "/proc/" + pid + "/fd";
    DIR* fds = ::opendir(fd_dir.c_str());
    if (fds == nullptr) continue;  // another user's process
    while (const dirent* fd = ::readdir(fds)) {
      char target[64] = {};
      const std::string link = fd_dir + "/" + fd->d_name;
      const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
      const std::string text(target, n > 0 ? static_cast<size_t>(n) : 0);
      if (text.rfind("socket:[", 0) == 0 && inodes.count(text.substr(8, text.size() - 9)) > 0) {
        found = PortHolder{std::atoi(pid.c_str()), ReadComm(pid)};
        break;
      }
    }
    ::closedir(fds);
    if (found) break;
  }
  ::closedir(proc);
  return found;
}

ListenSocket OpenListenSocket(const std::string& host, int port, bool reuse_port, int backlog) {
  const std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "cannot listen on " + where + ": " + ::gai_strerror(rc), {.key = "--host"});
  }
  int error = EADDRNOTAVAIL;
  int fd = -1;
  for (const addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = errno;
      continue;
    }
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, backlog) != 0) {
      error = errno;
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) Refuse(host, port, error, reuse_port);
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port = bound.ss_family == AF_INET6
                             ? ntohs(reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port)
                             : ntohs(reinterpret_cast<const sockaddr_in*>(&bound)->sin_port);
  return ListenSocket(fd, bound_port);
}

}  // namespace shardflow::serve
