#include "core/stop_signal.hpp"

#include <unistd.h>
#include <atomic>

#include <csignal>
#include <cstdio>

namespace shardflow {
namespace {

std::atomic<int> first_signal{0};
std::atomic<int> signal_count{0};
static_assert(std::atomic<int>::is_always_lock_free, "used from a signal handler");

extern "C" void OnStopSignal(int signal) {
  int none = 0;
  const bool first = first_signal.compare_exchange_strong(none, signal);
  signal_count.fetch_add(1);
  if (signal == SIGINT && !first) {  // a second Ctrl-C: now (async-signal-safe calls only)
    static const char kLine[] =
        "\nsecond Ctrl-C: exiting now without a new checkpoint (the previous one stays)\n";
    [[maybe_unused]] const ssize_t n = write(STDERR_FILENO, kLine, sizeof(kLine) - 1);
    _exit(kExitInterrupted);
  }
}

}  // namespace

void InstallStopHandlers() {
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // reads and waits in progress carry on
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

int StopExitStatus(int signal) { return signal == SIGINT ? kExitInterrupted : kExitPreempted; }

int StopSignal() { return first_signal.load(); }

int StopSignalCount() { return signal_count.load(); }

const char* StopSignalName(int signal) {
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGUSR1) return "SIGUSR1";
  if (signal == SIGINT) return "SIGINT";
  static thread_local char text[24];
  std::snprintf(text, sizeof(text), "signal %d", signal);
  return text;
}

}  // namespace shardflow
