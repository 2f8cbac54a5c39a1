#include "comm/allreduce_shm.hpp"

#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>
#include <new>
#include <vector>

#include "comm/ring_layout.hpp"
#include "core/check_mpi.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

using Counter = std::atomic<uint32_t>;
static_assert(sizeof(Counter) == sizeof(uint32_t) && Counter::is_always_lock_free,
              "futex words must be plain lock-free 32-bit atomics");

// The head of every rank's block; each counter on its own cache line.
struct alignas(64) Control {
  alignas(64) Counter posted{0};
  alignas(64) Counter reduced{0};
  alignas(64) Counter done{0};
  alignas(64) Counter sleepers{0};  // threads of any rank asleep on one of these counters
};
constexpr size_t kControlBytes = (sizeof(Control) + 4095) / 4096 * 4096;

// Round numbers wrap at 2^32; a counter has reached `target` when it is not behind it.
bool Reached(uint32_t value, uint32_t target) { return static_cast<int32_t>(value - target) >= 0; }

long Futex(Counter* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE: the word lives in memory shared between processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

// Spin briefly (a peer that is on time arrives within microseconds), then yield the core a
// bounded number of times (when ranks outnumber cores the peer we wait for may be waiting for
// this very core), then sleep on the futex. The 50 ms timeout only bounds one sleep; the
// collective's watchdog decides when a peer is lost.
void WaitFor(Counter& counter, uint32_t target, Control& owner) {
  constexpr int kSpins = 256;
  constexpr int kYields = 64;
  for (int i = 0; i < kSpins; ++i) {
    if (Reached(counter.load(std::memory_order_acquire), target)) return;
    _mm_pause();
  }
  for (int i = 0; i < kYields; ++i) {
    if (Reached(counter.load(std::memory_order_acquire), target)) return;
    sched_yield();
  }
  const timespec timeout{0, 50 * 1000 * 1000};
  for (;;) {
    owner.sleepers.fetch_add(1, std::memory_order_seq_cst);
    const uint32_t seen = counter.load(std::memory_order_seq_cst);
    if (!Reached(seen, target)) Futex(&counter, FUTEX_WAIT, seen, &timeout);
    owner.sleepers.fetch_sub(1, std::memory_order_seq_cst);
    if (Reached(counter.load(std::memory_order_acquire), target)) return;
  }
}

void Publish(Counter& counter, uint32_t value, Control& owner) {
  counter.store(value, std::memory_order_seq_cst);
  if (owner.sleepers.load(std::memory_order_seq_cst) > 0)
    Futex(&counter, FUTEX_WAKE, INT_MAX, nullptr);
}

// The window and the per-call round counter, kept with the communicator.
class ShmState {
 public:
  ShmState(MPI_Comm comm, size_t slot_bytes) : slot_bytes_(slot_bytes) {
    SF_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
    int size = 0;
    int rank = 0;
    SF_CHECK_MPI(MPI_Comm_size(comm_, &size));
    SF_CHECK_MPI(MPI_Comm_rank(comm_, &rank));
    MPI_Comm node = MPI_COMM_NULL;
    SF_CHECK_MPI(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    if (node_size != size) {
      MPI_Comm_free(&comm_);
      throw Error(ErrorCode::kInvalidArgument,
                  "the shm all-reduce needs every rank on one node (" + std::to_string(node_size) +
                      " of " + std::to_string(size) + " ranks share this one)",
                  {.rank = rank, .hint = "use allreduce = auto, ring or hierarchical"});
    }
    MPI_Info info = MPI_INFO_NULL;
    SF_CHECK_MPI(MPI_Info_create(&info));
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    void* base = nullptr;
    const auto block = static_cast<MPI_Aint>(kControlBytes + 2 * slot_bytes_);
    const int rc = MPI_Win_allocate_shared(block, 1, info, comm_, &base, &win_);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
      MPI_Comm_free(&comm_);
      SF_CHECK_MPI(rc);
    }
    new (base) Control();
    blocks_.resize(static_cast<size_t>(size));
    for (int q = 0; q < size; ++q) {
      MPI_Aint bytes = 0;
      int disp = 0;
      void* p = nullptr;
      SF_CHECK_MPI(MPI_Win_shared_query(win_, q, &bytes, &disp, &p));
      blocks_[static_cast<size_t>(q)] = static_cast<char*>(p);
    }
    SF_CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
    SF_CHECK_MPI(MPI_Barrier(comm_));  // every Control constructed before anyone reads one
  }

  ~ShmState() {
    // Freeing the window is collective. A rank unwinding from an error must not block in it
    // while its peers wait elsewhere; the job is about to end, so the window is left to exit.
    if (std::uncaught_exceptions() > 0) return;
    MPI_Win_unlock_all(win_);
    MPI_Win_free(&win_);
    MPI_Comm_free(&comm_);
  }
  ShmState(const ShmState&) = delete;
  ShmState& operator=(const ShmState&) = delete;

  size_t slot_bytes() const { return slot_bytes_; }
  Control& control(int q) const { return *reinterpret_cast<Control*>(blocks_[Index(q)]); }
  float* slot(int q, uint32_t round) const {
    return reinterpret_cast<float*>(blocks_[Index(q)] + kControlBytes + (round % 2) * slot_bytes_);
  }
  uint32_t NextRound() { return ++round_; }

 private:
  static size_t Index(int q) { return static_cast<size_t>(q); }

  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Win win_ = MPI_WIN_NULL;
  size_t slot_bytes_;
  std::vector<char*> blocks_;
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

// out[i] = in[0][i] + in[1][i] + ... + in[n-1][i], summed in rank order, divided by `divisor`
// when it is not 1 (ReduceMode::kAverage), also stored to mirror.
void SumInRankOrder(const std::vector<const float*>& in, size_t count, float divisor,
                    float* __restrict out, float* __restrict mirror) {
  constexpr size_t kBlock = 1024;
  alignas(64) float acc[kBlock];
  for (size_t base = 0; base < count; base += kBlock) {
    const size_t m = std::min(kBlock, count - base);
    const float* __restrict first = in[0] + base;
    for (size_t i = 0; i < m; ++i) acc[i] = first[i];
    for (size_t q = 1; q < in.size(); ++q) {
      const float* __restrict src = in[q] + base;
      for (size_t i = 0; i < m; ++i) acc[i] += src[i];
    }
    if (divisor != 1.0f) {
      for (size_t i = 0; i < m; ++i) acc[i] /= divisor;
    }
    std::memcpy(out + base, acc, m * sizeof(float));
    std::memcpy(mirror + base, acc, m * sizeof(float));
  }
}

}  // namespace

void AllreduceShm(Communicator& comm, float* data, size_t count, const AllreduceOptions& options) {
  const int n = comm.size();
  if (n == 1 || count == 0) return;
  const int r = comm.rank();
  const size_t slot_bytes = std::max<size_t>(
      64, (options.segment_bytes ? options.segment_bytes : kDefaultShmSlotBytes) / 64 * 64);
  ShmState& state = StateFor(comm, slot_bytes);
  const size_t slot_elements = slot_bytes / sizeof(float);
  Control& mine = state.control(r);
  std::vector<const float*> sources(static_cast<size_t>(n));
  const float divisor = options.mode == ReduceMode::kAverage ? static_cast<float>(n) : 1.0f;

  for (size_t offset = 0; offset < count; offset += slot_elements) {
    const size_t m = std::min(slot_elements, count - offset);
    float* piece = data + offset;
    const uint32_t round = state.NextRound();
    // 1. This round's slot was last read in round - 2.
    for (int q = 0; q < n; ++q) {
      if (q != r) WaitFor(state.control(q).done, round - 2, state.control(q));
    }
    // 2. Post the piece.
    float* my_slot = state.slot(r, round);
    std::memcpy(my_slot, piece, m * sizeof(float));
    Publish(mine.posted, round, mine);
    // 3. Reduce sub-piece r over every rank's slot.
    for (int q = 0; q < n; ++q) {
      if (q != r) WaitFor(state.control(q).posted, round, state.control(q));
      sources[static_cast<size_t>(q)] = state.slot(q, round);
    }
    const ElementRange own = BalancedPart(m, static_cast<size_t>(n), static_cast<size_t>(r));
    for (auto& s : sources) s += own.offset;
    SumInRankOrder(sources, own.count, divisor, piece + own.offset, my_slot + own.offset);
    Publish(mine.reduced, round, mine);
    // 4. Gather the other sub-pieces.
    for (int q = 0; q < n; ++q) {
      if (q == r) continue;
      Control& peer = state.control(q);
      WaitFor(peer.reduced, round, peer);
      const ElementRange part = BalancedPart(m, static_cast<size_t>(n), static_cast<size_t>(q));
      std::memcpy(piece + part.offset, state.slot(q, round) + part.offset,
                  part.count * sizeof(float));
    }
    Publish(mine.done, round, mine);
  }
}

}  // namespace shardflow::comm
