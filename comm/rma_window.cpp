#include "comm/rma_window.hpp"

#include <algorithm>
#include <exception>

#include "core/check_mpi.hpp"

namespace shardflow::comm {

RmaWindow::RmaWindow(const Communicator& comm, size_t bytes)
    : bytes_(bytes), rank_(comm.rank()), max_count_(comm.max_message_count()) {
  MPI_Info info;
  SF_CHECK_MPI(MPI_Info_create(&info));
  // Accumulates only sum floats: lets the library use its fastest atomic path.
  SF_CHECK_MPI(MPI_Info_set(info, "accumulate_ops", "same_op"));
  const int rc = MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, info, comm.raw(), &base_, &win_);
  MPI_Info_free(&info);
  SF_CHECK_MPI(rc);
  SF_CHECK_MPI(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN));
}

RmaWindow::~RmaWindow() {
  // Freeing is collective: not while an exception unwinds (the process is about to end).
  if (win_ != MPI_WIN_NULL && std::uncaught_exceptions() == 0) MPI_Win_free(&win_);
}

void RmaWindow::LockLocal() const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank_, 0, win_));
}

void RmaWindow::UnlockLocal() const { SF_CHECK_MPI(MPI_Win_unlock(rank_, win_)); }

void RmaWindow::Get(void* out, size_t bytes, int target, size_t offset) const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_));
  for (size_t done = 0; done < bytes;) {
    const int n = static_cast<int>(std::min(bytes - done, max_count_));
    SF_CHECK_MPI(MPI_Get(static_cast<char*>(out) + done, n, MPI_BYTE, target,
                         static_cast<MPI_Aint>(offset + done), n, MPI_BYTE, win_));
    done += static_cast<size_t>(n);
  }
  SF_CHECK_MPI(MPI_Win_unlock(target, win_));
}

void RmaWindow::Put(const void* in, size_t bytes, int target, size_t offset) const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_));
  for (size_t done = 0; done < bytes;) {
    const int n = static_cast<int>(std::min(bytes - done, max_count_));
    SF_CHECK_MPI(MPI_Put(static_cast<const char*>(in) + done, n, MPI_BYTE, target,
                         static_cast<MPI_Aint>(offset + done), n, MPI_BYTE, win_));
    done += static_cast<size_t>(n);
  }
  SF_CHECK_MPI(MPI_Win_unlock(target, win_));
}

void RmaWindow::AccumulateFloats(const float* in, size_t count, int target,
                                 size_t offset_bytes) const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_));
  for (size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min(count - done, max_count_));
    SF_CHECK_MPI(MPI_Accumulate(in + done, n, MPI_FLOAT, target,
                                static_cast<MPI_Aint>(offset_bytes + done * sizeof(float)), n,
                                MPI_FLOAT, MPI_SUM, win_));
    done += static_cast<size_t>(n);
  }
  SF_CHECK_MPI(MPI_Win_unlock(target, win_));
}

}  // namespace shardflow::comm
