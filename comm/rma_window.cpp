#include "comm/rma_window.hpp"

#include <algorithm>
#include <exception>

#include "core/check_mpi.hpp"

namespace shardflow::comm {

FloatWindow::FloatWindow(const Communicator& comm, size_t count)
    : comm_(comm.raw()), max_count_(comm.max_message_count()) {
  MPI_Info info;
  SF_CHECK_MPI(MPI_Info_create(&info));
  // Accumulates only sum floats: lets the library use its fastest atomic path.
  SF_CHECK_MPI(MPI_Info_set(info, "accumulate_ops", "same_op"));
  const int rc = MPI_Win_allocate(static_cast<MPI_Aint>(count * sizeof(float)), sizeof(float), info,
                                  comm_, &base_, &win_);
  MPI_Info_free(&info);
  SF_CHECK_MPI(rc);
  SF_CHECK_MPI(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN));
}

FloatWindow::~FloatWindow() {
  // Freeing is collective: not while an exception unwinds (the process is about to end).
  if (win_ != MPI_WIN_NULL && std::uncaught_exceptions() == 0) MPI_Win_free(&win_);
}

void FloatWindow::Get(float* out, size_t count, int target, size_t offset) const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_));
  for (size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min(count - done, max_count_));
    SF_CHECK_MPI(MPI_Get(out + done, n, MPI_FLOAT, target, static_cast<MPI_Aint>(offset + done), n,
                         MPI_FLOAT, win_));
    done += static_cast<size_t>(n);
  }
  SF_CHECK_MPI(MPI_Win_unlock(target, win_));
}

void FloatWindow::Accumulate(const float* in, size_t count, int target, size_t offset) const {
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win_));
  for (size_t done = 0; done < count;) {
    const int n = static_cast<int>(std::min(count - done, max_count_));
    SF_CHECK_MPI(MPI_Accumulate(in + done, n, MPI_FLOAT, target,
                                static_cast<MPI_Aint>(offset + done), n, MPI_FLOAT, MPI_SUM, win_));
    done += static_cast<size_t>(n);
  }
  SF_CHECK_MPI(MPI_Win_unlock(target, win_));
}

}  // namespace shardflow::comm
