#include "comm/allreduce_ring.hpp"

#include <algorithm>
#include <array>
#include <cstdint>

#include "comm/ring_layout.hpp"

namespace shardflow::comm {
namespace {

constexpr int kReduceScatterTag = 0x5f10;
constexpr int kAllGatherTag = 0x5f11;

size_t Mod(long long x, int n) { return static_cast<size_t>(((x % n) + n) % n); }

// Runs `units` units with two in flight. post_recv(u) / post_send(u) post unit u's transfers;
// finish(u) runs after unit u's receive completed (reduce or widen). A send of unit u may need
// unit u - S finished first: it is posted early (before finishing the previous unit) when
// S >= 2, and right after when S == 1.
template <typename PostRecv, typename PostSend, typename Finish>
void RunPipeline(const Communicator& comm, size_t units, size_t segments,
                 std::array<RequestList, 2>& recv_requests, PostRecv post_recv, PostSend post_send,
                 Finish finish) {
  if (units == 0) return;
  post_recv(0);
  if (units > 1) post_recv(1);
  post_send(0);
  for (size_t u = 0; u < units; ++u) {
    const bool send_next = u + 1 < units;
    const bool send_early = send_next && segments >= 2;
    if (send_early) post_send(u + 1);
    comm.WaitAll(recv_requests[u % 2]);
    finish(u);
    if (u + 2 < units) post_recv(u + 2);
    if (send_next && !send_early) post_send(u + 1);
  }
}

}  // namespace

void AllreduceRing(Communicator& comm, float* data, size_t count, const AllreduceOptions& options) {
  const int n = comm.size();
  if (n == 1 || count == 0) return;
  const int r = comm.rank();
  const int right = (r + 1) % n;
  const int left = (r + n - 1) % n;
  const size_t segment_bytes = options.segment_bytes ? options.segment_bytes : kDefaultSegmentBytes;
  const RingLayout layout(count, n, std::max<size_t>(1, segment_bytes / sizeof(float)));
  const size_t segments = layout.segments_per_chunk();
  const size_t units = static_cast<size_t>(n - 1) * segments;

  const WireFormat wire = options.wire;
  const bool narrow = wire != WireFormat::kFloat32;
  const size_t wire_bytes = WireElementBytes(wire);
  const MPI_Datatype wire_type = narrow ? MPI_UINT16_T : MPI_FLOAT;
  const size_t slot_bytes = (layout.MaxSegment() * wire_bytes + 63) / 64 * 64;
  auto* scratch = static_cast<char*>(comm.Scratch(slot_bytes * (narrow ? 4 : 2)));
  const std::array<char*, 2> recv_slot = {scratch, scratch + slot_bytes};
  const std::array<char*, 2> send_slot = {scratch + 2 * slot_bytes, scratch + 3 * slot_bytes};

  std::array<RequestList, 2> recv_requests;
  std::array<RequestList, 2> send_requests;
  // Posts the send of `range` (of data) through slot u % 2.
  auto send_segment = [&](size_t u, ElementRange range, int tag) {
    RequestList& requests = send_requests[u % 2];
    if (narrow) {
      comm.WaitAll(requests);  // the slot's previous send (unit u - 2) must be done
      auto* slot = reinterpret_cast<uint16_t*>(send_slot[u % 2]);
      PackToWire(wire, data + range.offset, range.count, slot);
      comm.PostSend(slot, range.count, wire_type, wire_bytes, right, tag, requests);
    } else {
      comm.PostSend(data + range.offset, range.count, MPI_FLOAT, sizeof(float), right, tag,
                    requests);
    }
  };
  auto wait_sends = [&] {
    comm.WaitAll(send_requests[0]);
    comm.WaitAll(send_requests[1]);
  };

  // Phase 1: reduce-scatter. Unit u: step s = u / S sends chunk r - s, receives chunk r - s - 1.
  auto rs_send_range = [&](size_t u) {
    return layout.Segment(Mod(r - static_cast<long long>(u / segments), n), u % segments);
  };
  auto rs_recv_range = [&](size_t u) {
    return layout.Segment(Mod(r - static_cast<long long>(u / segments) - 1, n), u % segments);
  };
  RunPipeline(
      comm, units, segments, recv_requests,
      [&](size_t u) {
        comm.PostRecv(recv_slot[u % 2], rs_recv_range(u).count, wire_type, wire_bytes, left,
                      kReduceScatterTag, recv_requests[u % 2]);
      },
      [&](size_t u) { send_segment(u, rs_send_range(u), kReduceScatterTag); },
      [&](size_t u) {
        const ElementRange range = rs_recv_range(u);
        float* dst = data + range.offset;
        if (narrow) {
          AccumulateFromWire(wire, reinterpret_cast<const uint16_t*>(recv_slot[u % 2]), range.count,
                             dst);
        } else {
          // The hot loop: dst += received segment (vectorised by the compiler).
          const auto* src = reinterpret_cast<const float*>(recv_slot[u % 2]);
          for (size_t i = 0; i < range.count; ++i) dst[i] += src[i];
        }
      });
  wait_sends();

  // Phase 2: all-gather. Unit u: step s sends chunk r + 1 - s, receives chunk r - s.
  if (narrow) {
    const ElementRange own = layout.Chunk(Mod(r + 1, n));
    RoundThroughWire(wire, data + own.offset, own.count);
  }
  auto ag_send_range = [&](size_t u) {
    return layout.Segment(Mod(r + 1 - static_cast<long long>(u / segments), n), u % segments);
  };
  auto ag_recv_range = [&](size_t u) {
    return layout.Segment(Mod(r - static_cast<long long>(u / segments), n), u % segments);
  };
  RunPipeline(
      comm, units, segments, recv_requests,
      [&](size_t u) {
        const ElementRange range = ag_recv_range(u);
        void* dst =
            narrow ? static_cast<void*>(recv_slot[u % 2]) : static_cast<void*>(data + range.offset);
        comm.PostRecv(dst, range.count, wire_type, wire_bytes, left, kAllGatherTag,
                      recv_requests[u % 2]);
      },
      [&](size_t u) { send_segment(u, ag_send_range(u), kAllGatherTag); },
      [&](size_t u) {
        if (!narrow) return;
        const ElementRange range = ag_recv_range(u);
        UnpackFromWire(wire, reinterpret_cast<const uint16_t*>(recv_slot[u % 2]), range.count,
                       data + range.offset);
      });
  wait_sends();
}

}  // namespace shardflow::comm
