#include "comm/shm_window.hpp"

#include <immintrin.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <new>
#include <string>

#include "core/check_mpi.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

static_assert(sizeof(ShmCounter) == sizeof(uint32_t) && ShmCounter::is_always_lock_free,
              "futex words must be plain lock-free 32-bit atomics");
constexpr size_t kControlBytes = (sizeof(ShmControl) + 4095) / 4096 * 4096;

long Futex(ShmCounter* word, int op, uint32_t value, const timespec* timeout) {
  // Not FUTEX_PRIVATE: the word lives in memory shared between processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

// Spin (a peer that is on time arrives within microseconds), then yield the core a bounded
// number of times (when ranks outnumber cores the peer may be waiting for this very core), then
// sleep. The 50 ms timeout only bounds one sleep; the collective's watchdog decides when a peer
// is lost.
void WaitFor(ShmCounter& counter, uint32_t target, ShmControl& owner, int spins) {
  constexpr int kYields = 64;
  for (int i = 0; i < spins; ++i) {
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

void Publish(ShmCounter& counter, uint32_t value, ShmControl& owner) {
  counter.store(value, std::memory_order_seq_cst);
  if (owner.sleepers.load(std::memory_order_seq_cst) > 0) {
    Futex(&counter, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

namespace {

// Where MPI puts the window's backing file: OpenMPI's osc_sm_backing_directory (set through
// the environment by mpirun --mca), else its Linux default.
std::string BackingDirectory() {
  const char* dir = std::getenv("OMPI_MCA_osc_sm_backing_directory");
  return dir != nullptr && *dir != '\0' ? dir : "/dev/shm";
}

// Free bytes in `dir`; unlimited when it cannot be asked (then MPI decides).
uint64_t FreeBytes(const std::string& dir) {
  struct statvfs st;
  if (statvfs(dir.c_str(), &st) != 0) return UINT64_MAX;
  return static_cast<uint64_t>(st.f_bavail) * static_cast<uint64_t>(st.f_frsize);
}

// Spins before yielding: long (2000) when every rank has a processor, short (64) when ranks
// outnumber them, since a spinning rank then keeps the peer it waits for off the core.
// Measured: docs/design.md decision 15.
int SpinsFor(int ranks) {
  const long processors = sysconf(_SC_NPROCESSORS_ONLN);
  return processors > 0 && ranks > processors ? 64 : 2000;
}

// How many ranks of `comm` share this rank's node. Collective.
int NodeSize(MPI_Comm comm) {
  MpiComm node;
  SF_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, node.out()));
  int node_size = 0;
  SF_CHECK_MPI(MPI_Comm_size(node.get(), &node_size));
  return node_size;
}

// Throws ShmUnavailable on every rank alike unless every rank's backing directory has room for
// `size` blocks of `bytes` plus 1 MiB. Collective. OpenMPI 4.1 hangs when it cannot back the
// window (the rank that creates the file returns an error, the others wait for it in a
// broadcast), so the space is checked before asking MPI, all ranks agreeing.
void CheckRoom(MPI_Comm comm, int rank, int size, MPI_Aint bytes) {
  const std::string dir = BackingDirectory();
  const uint64_t need = static_cast<uint64_t>(size) * static_cast<uint64_t>(bytes) + (1u << 20);
  const uint64_t free_bytes = FreeBytes(dir);
  int ok = free_bytes >= need ? 1 : 0;
  int all_ok = 0;
  SF_CHECK_MPI(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, comm));
  if (all_ok) return;
  throw ShmUnavailable(
      ErrorCode::kCommunication,
      "not enough room in " + dir + " for a shared-memory window: " + std::to_string(need) +
          " bytes needed, " + std::to_string(free_bytes) + " free",
      {.rank = rank,
       .hint = "in a container raise --shm-size; OpenMPI: --mca osc_sm_backing_directory "
               "DIR; or set dist.allreduce = ring"});
}

// MPI_Win_allocate_shared of `bytes` per rank, the blocks not necessarily contiguous. Returns
// MPI's return code, for the caller to word the failure.
int AllocateSharedWindow(MPI_Aint bytes, MPI_Comm comm, void** base, MpiWin* win) {
  MpiInfo info;
  SF_CHECK_MPI(MPI_Info_create(info.out()));
  SF_CHECK_MPI(MPI_Info_set(info.get(), "alloc_shared_noncontig", "true"));
  return MPI_Win_allocate_shared(bytes, 1, info.get(), comm, base, win->out());
}

}  // namespace

ShmWindow::ShmWindow(MPI_Comm comm, size_t bytes_per_rank)
    : bytes_per_rank_((bytes_per_rank + 63) / 64 * 64) {
  SF_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  int size = 0;
  SF_CHECK_MPI(MPI_Comm_size(comm_.get(), &size));
  SF_CHECK_MPI(MPI_Comm_rank(comm_.get(), &rank_));
  if (const int node_size = NodeSize(comm_.get()); node_size != size) {
    throw Error(ErrorCode::kInvalidArgument,
                "shared-memory all-reduce needs every rank on one node (" +
                    std::to_string(node_size) + " of " + std::to_string(size) +
                    " ranks share this one)",
                {.rank = rank_, .hint = "use allreduce = auto, ring or hierarchical"});
  }
  const auto bytes = static_cast<MPI_Aint>(kControlBytes + bytes_per_rank_);
  CheckRoom(comm_.get(), rank_, size, bytes);
  void* base = nullptr;
  if (AllocateSharedWindow(bytes, comm_.get(), &base, &win_) != MPI_SUCCESS) {
    throw Error(ErrorCode::kCommunication,
                "could not allocate a shared-memory window of " + std::to_string(bytes) +
                    " bytes per rank for " + std::to_string(size) + " ranks on this node",
                {.rank = rank_,
                 .hint = "MPI backs it with a file in /dev/shm (OpenMPI: --mca "
                         "osc_sm_backing_directory DIR); in a container raise --shm-size, or "
                         "set dist.allreduce = ring"});
  }
  new (base) ShmControl();
  heads_.resize(static_cast<size_t>(size));
  blocks_.resize(static_cast<size_t>(size));
  for (int q = 0; q < size; ++q) {
    MPI_Aint got = 0;
    int disp = 0;
    void* p = nullptr;
    SF_CHECK_MPI(MPI_Win_shared_query(win_.get(), q, &got, &disp, &p));
    heads_[static_cast<size_t>(q)] = static_cast<char*>(p);
    blocks_[static_cast<size_t>(q)] = static_cast<char*>(p) + kControlBytes;
  }
  spins_ = SpinsFor(size);
  SF_CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_.get()));
  SF_CHECK_MPI(MPI_Barrier(comm_.get()));  // every control line constructed before anyone reads one
}

// win_ and then comm_ are freed by their members' destructors; while an exception unwinds the
// window stays locked and allocated (mpi_handle.hpp).
ShmWindow::~ShmWindow() {
  if (win_ && std::uncaught_exceptions() == 0) MPI_Win_unlock_all(win_.get());
}

ShmControl& ShmWindow::control(int q) const {
  return *reinterpret_cast<ShmControl*>(heads_[static_cast<size_t>(q)]);
}

char* ShmWindow::block(int q) const { return blocks_[static_cast<size_t>(q)]; }

}  // namespace shardflow::comm
