#include "comm/allreduce_shm.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/ring_layout.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

// The staging window of AllreduceShm and its round counter, kept with the communicator.
class ShmState {
 public:
  ShmState(MPI_Comm comm, size_t slot_bytes)
      : window_(comm, 2 * slot_bytes), slot_bytes_(slot_bytes) {}
  ShmWindow& window() { return window_; }
  size_t slot_bytes() const { return slot_bytes_; }
  float* slot(int q, uint32_t round) const {
    return reinterpret_cast<float*>(window_.block(q) + (round % 2) * slot_bytes_);
  }
  uint32_t NextRound() { return ++round_; }

 private:
  ShmWindow window_;
  size_t slot_bytes_;
  uint32_t round_ = 0;
};

ShmState& StateFor(Communicator& comm, size_t slot_bytes) {
  std::shared_ptr<void>& holder = comm.shm_state();
  auto* state = static_cast<ShmState*>(holder.get());
  if (state == nullptr || state->slot_bytes() != slot_bytes) {
    holder.reset();  // collective on every rank alike: the options agree
    holder = std::make_shared<ShmState>(comm.raw(), slot_bytes);
    state = static_cast<ShmState*>(holder.get());
  }
  return *state;
}

constexpr size_t kBlock = 1024;
// Messages up to this size take the one-hand-off path (measured: docs/design.md decision 14 and
// BENCHMARKS.md "All-reduce").
constexpr size_t kShmSmallBytes = 16 * 1024;

// acc[0..m) = in[0][i] + in[1][i] + ... + in[n-1][i], summed in rank order, divided by
// `divisor` when it is not 1 (ReduceMode::kAverage). REQUIRES: m <= kBlock.
void SumBlock(const std::vector<const float*>& in, size_t base, size_t m, float divisor,
              float* __restrict acc) {
  const float* __restrict first = in[0] + base;
  for (size_t i = 0; i < m; ++i) acc[i] = first[i];
  for (size_t q = 1; q < in.size(); ++q) {
    const float* __restrict src = in[q] + base;
    for (size_t i = 0; i < m; ++i) acc[i] += src[i];
  }
  if (divisor != 1.0f) {
    for (size_t i = 0; i < m; ++i) acc[i] /= divisor;
  }
}

float Divisor(ReduceMode mode, int n) {
  return mode == ReduceMode::kAverage ? static_cast<float>(n) : 1.0f;
}

ElementRange SubPiece(size_t count, int n, int q) {
  return BalancedPart(count, static_cast<size_t>(n), static_cast<size_t>(q));
}

}  // namespace

void AllreduceShm(Communicator& comm, float* data, size_t count, const AllreduceOptions& options) {
  const int n = comm.size();
  if (n == 1 || count == 0) return;
  const int r = comm.rank();
  const size_t slot_bytes = std::max<size_t>(
      64, (options.segment_bytes ? options.segment_bytes : kDefaultShmSlotBytes) / 64 * 64);
  ShmState& state = StateFor(comm, slot_bytes);
  ShmWindow& window = state.window();
  const size_t slot_elements = slot_bytes / sizeof(float);
  ShmControl& mine = window.control(r);
  std::vector<const float*> sources(static_cast<size_t>(n));
  const float divisor = Divisor(options.mode, n);
  alignas(64) float acc[kBlock];

  if (count * sizeof(float) <= kShmSmallBytes && count <= slot_elements) {
    // Small: one hand-off instead of three. Every rank posts its whole message and sums all
    // of them itself, in rank order (so every rank computes the same bits); done tells the
    // owner its slot may be reused two rounds later.
    const uint32_t round = state.NextRound();
    for (int q = 0; q < n; ++q) {
      if (q != r) WaitFor(window.control(q).done, round - 2, window.control(q), window.spins());
    }
    std::memcpy(state.slot(r, round), data, count * sizeof(float));
    Publish(mine.posted, round, mine);
    for (int q = 0; q < n; ++q) {
      if (q != r) WaitFor(window.control(q).posted, round, window.control(q), window.spins());
      sources[static_cast<size_t>(q)] = state.slot(q, round);
    }
    for (size_t base = 0; base < count; base += kBlock) {
      const size_t b = std::min(kBlock, count - base);
      SumBlock(sources, base, b, divisor, acc);
      std::memcpy(data + base, acc, b * sizeof(float));
    }
    Publish(mine.done, round, mine);
    return;
  }
  for (size_t offset = 0; offset < count; offset += slot_elements) {
    const size_t m = std::min(slot_elements, count - offset);
    float* piece = data + offset;
    const uint32_t round = state.NextRound();
    // 1. This round's slot was last read in round - 2.
    for (int q = 0; q < n; ++q) {
      if (q != r) WaitFor(window.control(q).done, round - 2, window.control(q), window.spins());
    }
    // 2. Post the piece.
    float* my_slot = state.slot(r, round);
    std::memcpy(my_slot, piece, m * sizeof(float));
    Publish(mine.posted, round, mine);
    // 3. Reduce sub-piece r over every rank's slot, into the buffer and over the own slot.
    for (int q = 0; q < n; ++q) {
      if (q != r) WaitFor(window.control(q).posted, round, window.control(q), window.spins());
      sources[static_cast<size_t>(q)] = state.slot(q, round);
    }
    const ElementRange own = SubPiece(m, n, r);
    for (size_t base = 0; base < own.count; base += kBlock) {
      const size_t b = std::min(kBlock, own.count - base);
      SumBlock(sources, own.offset + base, b, divisor, acc);
      std::memcpy(piece + own.offset + base, acc, b * sizeof(float));
      std::memcpy(my_slot + own.offset + base, acc, b * sizeof(float));
    }
    Publish(mine.reduced, round, mine);
    // 4. Gather the other sub-pieces.
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      ShmControl& peer = window.control(q);
      WaitFor(peer.reduced, round, peer, window.spins());
      const ElementRange part = SubPiece(m, n, q);
      std::memcpy(piece + part.offset, state.slot(q, round) + part.offset,
                  part.count * sizeof(float));
    }
    Publish(mine.done, round, mine);
  }
}

SharedFloatBuffer::SharedFloatBuffer(Communicator& comm, size_t count)
    : comm_(comm), count_(count), window_(comm.raw(), std::max<size_t>(1, count) * sizeof(float)) {
  std::memset(data(), 0, count_ * sizeof(float));
}

float* SharedFloatBuffer::data() { return peer(window_.rank()); }

float* SharedFloatBuffer::peer(int q) { return reinterpret_cast<float*>(window_.block(q)); }

void AllreduceShared(SharedFloatBuffer& buffer, size_t offset, size_t count, ReduceMode mode) {
  Communicator& comm = buffer.comm();
  const int n = comm.size();
  if (offset > buffer.size() || count > buffer.size() - offset) {
    throw Error(ErrorCode::kInvalidArgument,
                "shared all-reduce of [" + std::to_string(offset) + ", " +
                    std::to_string(offset + count) + ") outside a buffer of " +
                    std::to_string(buffer.size()) + " elements",
                {.rank = comm.rank()});
  }
  if (n == 1 || count == 0) return;
  CollectiveScope scope(comm.watchdog(), "allreduce(shm, in place)", count * sizeof(float));
  const int r = comm.rank();
  ShmWindow& window = buffer.window();
  ShmControl& mine = window.control(r);
  const uint32_t round = buffer.NextRound();
  // Every rank's region is final (the caller wrote it before this call) ...
  Publish(mine.posted, round, mine);
  std::vector<const float*> sources(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) {
    if (q != r) WaitFor(window.control(q).posted, round, window.control(q), window.spins());
    sources[static_cast<size_t>(q)] = buffer.peer(q) + offset;
  }
  // ... sub-piece r is summed over every rank's region and written back into every region ...
  const ElementRange own = SubPiece(count, n, r);
  const float divisor = Divisor(mode, n);
  alignas(64) float acc[kBlock];
  for (size_t base = 0; base < own.count; base += kBlock) {
    const size_t b = std::min(kBlock, own.count - base);
    SumBlock(sources, own.offset + base, b, divisor, acc);
    for (int q = 0; q < n; ++q) {
      std::memcpy(buffer.peer(q) + offset + own.offset + base, acc, b * sizeof(float));
    }
  }
  Publish(mine.reduced, round, mine);
  // ... and the region is the caller's again once every rank has written its sub-piece.
  for (int q = 0; q < n; ++q) {
    if (q != r) WaitFor(window.control(q).reduced, round, window.control(q), window.spins());
  }
}

}  // namespace shardflow::comm
