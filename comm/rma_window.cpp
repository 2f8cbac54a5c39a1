#include "comm/rma_window.hpp"

#include <algorithm>

#include "core/check_mpi.hpp"

namespace shardflow::comm {

RmaWindow::RmaWindow(const Communicator& comm, size_t bytes)
    : bytes_(bytes), rank_(comm.rank()), max_count_(comm.max_message_count()) {
  MpiInfo info;
  SF_CHECK_MPI(MPI_Info_create(info.out()));
  // Accumulates only sum floats: lets the library use its fastest atomic path.
  SF_CHECK_MPI(MPI_Info_set(info.get(), "accumulate_ops", "same_op"));
  SF_CHECK_MPI(MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, info.get(), comm.raw(), &base_,
                                win_.out()));
  SF_CHECK_MPI(MPI_Win_set_errhandler(win_.get(), MPI_ERRORS_RETURN));
}

void RmaWindow::LockLocal() const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank_, 0, win_.get()));
}

void RmaWindow::UnlockLocal() const { SF_CHECK_MPI(MPI_Win_unlock(rank_, win_.get())); }

void RmaWindow::Get(void* out, size_t bytes, int target, size_t offset) const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_.get()));
  for (size_t done = 0; done < bytes;) {
    const int n = static_cast<int>(std::min(bytes - done, max_count_));
    SF_CHECK_MPI(MPI_Get(static_cast<char*>(out) + done, n, MPI_BYTE, target,
                         static_cast<MPI_Aint>(offset + done), n, MPI_BYTE, win_.get()));
    done += static_cast<size_t>(n);
  }
  SF_CHECK_MPI(MPI_Win_unlock(target, win_.get()));
}

void RmaWindow::Put(const void* in, size_t bytes, int target, size_t offset) const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_.get()));
  for (size_t done = 0; done < bytes;) {
    const int n = static_cast<int>(std::min(bytes - done, max_count_));
    SF_CHECK_MPI(MPI_Put(static_cast<const char*>(in) + done, n, MPI_BYTE, target,
                         static_cast<MPI_Aint>(offset + done), n, MPI_BYTE, win_.get()));
    done += static_cast<size_t>(n);
  }
  SF_CHECK_MPI(MPI_Win_unlock(target, win_.get()));
}

void RmaWindow::AccumulateFloats(const float* in, size_t count, int target,
                                 size_t offset_bytes) const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_.get()));
  for (size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min(count - done, max_count_));
    SF_CHECK_MPI(MPI_Accumulate(in + done, n, MPI_FLOAT, target,
                                static_cast<MPI_Aint>(offset_bytes + done * sizeof(float)), n,
                                MPI_FLOAT, MPI_SUM, win_.get()));
    done += static_cast<size_t>(n);
  }
  SF_CHECK_MPI(MPI_Win_unlock(target, win_.get()));
}

}  // namespace shardflow::comm
