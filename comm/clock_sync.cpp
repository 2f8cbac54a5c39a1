#include "comm/clock_sync.hpp"

#include <limits>

#include "comm/watchdog.hpp"

#include "core/timer.hpp"

namespace shardflow::comm {
namespace {
constexpr int kPingTag = 0x5f30;
constexpr int kPongTag = 0x5f31;
}  // namespace

ClockSample MeasureClockOffset(const Communicator& comm, int rounds) {
  ClockSample best;
  best.local_ns = MonotonicNanos();
  if (comm.size() < 2) return best;
  // A collective for the watchdog: waits then go straight to MPI (a point-to-point wait outside
  // a collective naps between polls, which would add the nap to the round trip).
  CollectiveScope scope(comm.watchdog(), "clock sync", sizeof(int64_t));
  RequestList requests;
  if (comm.rank() == 0) {
    // Serve each rank in turn: the others wait their turn in the receive of their first pong.
    for (int peer = 1; peer < comm.size(); ++peer) {
      for (int round = 0; round < rounds; ++round) {
        int64_t ping = 0;
        comm.PostRecvBytes(&ping, sizeof(ping), peer, kPingTag, requests);
        comm.WaitAll(requests);
        const int64_t now = MonotonicNanos();
        comm.PostSendBytes(&now, sizeof(now), peer, kPongTag, requests);
        comm.WaitAll(requests);
      }
    }
    return best;
  }
  int64_t shortest = std::numeric_limits<int64_t>::max();
  for (int round = 0; round < rounds; ++round) {
    int64_t remote = 0;
    comm.PostRecvBytes(&remote, sizeof(remote), 0, kPongTag, requests);
    const int64_t t1 = MonotonicNanos();
    comm.PostSendBytes(&t1, sizeof(t1), 0, kPingTag, requests);
    comm.WaitAll(requests);
    const int64_t t2 = MonotonicNanos();
    if (t2 - t1 < shortest) {
      shortest = t2 - t1;
      best.local_ns = t1 + (t2 - t1) / 2;
      best.offset_ns = remote - best.local_ns;
      best.error_ns = (t2 - t1 + 1) / 2;
    }
  }
  return best;
}

}  // namespace shardflow::comm
