#include "comm/claim_counter.hpp"

#include "core/check_mpi.hpp"

namespace shardflow::comm {

ClaimCounter::ClaimCounter(const Communicator& comm, int owner, int64_t start) : owner_(owner) {
  const bool mine = comm.rank() == owner;
  const MPI_Aint bytes = mine ? static_cast<MPI_Aint>(2 * sizeof(int64_t)) : 0;
  SF_CHECK_MPI(
      MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, comm.raw(), &base_, win_.out()));
  SF_CHECK_MPI(MPI_Win_set_errhandler(win_.get(), MPI_ERRORS_RETURN));
  if (mine) {
    SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner_, 0, win_.get()));
    base_[0] = start;
    base_[1] = kNoFence;
    SF_CHECK_MPI(MPI_Win_unlock(owner_, win_.get()));
  }
  SF_CHECK_MPI(MPI_Barrier(comm.raw()));  // nobody claims before the owner has set `start`
}

ClaimCounter::Claim ClaimCounter::Next() const {
  MutexLock lock(epoch_mu_);
  const int64_t one = 1;
  Claim c;
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner_, 0, win_.get()));
  SF_CHECK_MPI(MPI_Fetch_and_op(&one, &c.index, MPI_INT64_T, owner_, 0, MPI_SUM, win_.get()));
  SF_CHECK_MPI(MPI_Get(&c.fence, 1, MPI_INT64_T, owner_, 1, 1, MPI_INT64_T, win_.get()));
  SF_CHECK_MPI(MPI_Win_unlock(owner_, win_.get()));
  return c;
}

ClaimCounter::Claim ClaimCounter::Peek() const {
  MutexLock lock(epoch_mu_);
  int64_t both[2] = {0, 0};
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner_, 0, win_.get()));
  SF_CHECK_MPI(MPI_Get(both, 2, MPI_INT64_T, owner_, 0, 2, MPI_INT64_T, win_.get()));
  SF_CHECK_MPI(MPI_Win_unlock(owner_, win_.get()));
  return {.index = both[0], .fence = both[1]};
}

void ClaimCounter::LowerFence(int64_t value) const {
  MutexLock lock(epoch_mu_);
  SF_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, owner_, 0, win_.get()));
  SF_CHECK_MPI(
      MPI_Accumulate(&value, 1, MPI_INT64_T, owner_, 1, 1, MPI_INT64_T, MPI_MIN, win_.get()));
  SF_CHECK_MPI(MPI_Win_unlock(owner_, win_.get()));
}

}  // namespace shardflow::comm
