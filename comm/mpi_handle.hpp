// Owning MPI handles: MpiComm, MpiWin, MpiInfo (comm/ makes no other kind that needs freeing;
// a group or datatype would get its traits here). Each frees the handle it holds
// (MPI_Comm_free, MPI_Win_free, MPI_Info_free) exactly once, in its destructor or at Reset, so a
// path that throws between making a handle and the end of its use cannot leak it, and comm/
// frees no handle by hand.
//
//   MpiComm dup;
//   SF_CHECK_MPI(MPI_Comm_dup(comm, dup.out()));  // dup owns the new communicator
//   SF_CHECK_MPI(MPI_Comm_rank(dup.get(), &rank));
//
// Freeing while an exception unwinds: MPI_Win_free synchronises every rank of the window, and a
// rank that throws alone would wait in it for peers that never come, so an MpiWin destroyed
// while an exception is in flight leaves its window to the end of the job (the error ends it).
// The other handles are freed on every path: their frees are local (MPI_Comm_free marks the
// communicator for deallocation and returns).
// A free's return code is not checked (a destructor cannot report it).
// Move-only. Thread-safety: as the handle it holds. Lifetime: free (destroy or Reset) every
// handle before MPI_Finalize.
#pragma once

#include <mpi.h>

#include <exception>

namespace shardflow::comm {
namespace internal {

struct CommTraits {
  using Handle = MPI_Comm;
  static Handle Null() { return MPI_COMM_NULL; }
  static void Free(Handle* handle) { MPI_Comm_free(handle); }
  static constexpr bool kSynchronisingFree = false;
};
struct WinTraits {
  using Handle = MPI_Win;
  static Handle Null() { return MPI_WIN_NULL; }
  static void Free(Handle* handle) { MPI_Win_free(handle); }
  static constexpr bool kSynchronisingFree = true;
};
struct InfoTraits {
  using Handle = MPI_Info;
  static Handle Null() { return MPI_INFO_NULL; }
  static void Free(Handle* handle) { MPI_Info_free(handle); }
  static constexpr bool kSynchronisingFree = false;
};

}  // namespace internal

template <typename Traits>
class MpiHandle {
 public:
  using Handle = typename Traits::Handle;

  MpiHandle() = default;
  // Takes ownership of `handle` (which must not be a predefined one, such as MPI_COMM_WORLD).
  explicit MpiHandle(Handle handle) : handle_(handle) {}
  ~MpiHandle() { Reset(); }
  MpiHandle(MpiHandle&& other) noexcept : handle_(other.Release()) {}
  MpiHandle& operator=(MpiHandle&& other) noexcept {
    if (this != &other) {
      Reset();
      handle_ = other.Release();
    }
    return *this;
  }
  MpiHandle(const MpiHandle&) = delete;
  MpiHandle& operator=(const MpiHandle&) = delete;

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Traits::Null(); }

  // Where the MPI call that makes a handle writes it; frees the one held first.
  Handle* out() {
    Reset();
    return &handle_;
  }
  // Gives the handle up without freeing it.
  Handle Release() {
    const Handle handle = handle_;
    handle_ = Traits::Null();
    return handle;
  }
  // Frees the handle now (see the top of this file for windows while an exception unwinds).
  void Reset() {
    if (handle_ == Traits::Null()) return;
    if (!Traits::kSynchronisingFree || std::uncaught_exceptions() == 0) Traits::Free(&handle_);
    handle_ = Traits::Null();
  }

 private:
  Handle handle_ = Traits::Null();
};

using MpiComm = MpiHandle<internal::CommTraits>;
using MpiWin = MpiHandle<internal::WinTraits>;
using MpiInfo = MpiHandle<internal::InfoTraits>;

}  // namespace shardflow::comm
