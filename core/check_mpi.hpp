// SF_CHECK_MPI(call): runs an MPI call and throws Error(kCommunication) naming the call, the
// source line, the rank and MPI's own error text when it does not report success (0).
// MpiEnvironment makes the world communicator return errors so they reach this check instead of
// aborting inside MPI. ThrowMpiError is defined in core/mpi_env.cpp.
// Thread-safety: as the checked call.
#pragma once

namespace shardflow::internal {
[[noreturn]] void ThrowMpiError(int rc, const char* call, const char* file, int line);
}  // namespace shardflow::internal

#define SF_CHECK_MPI(call)                                                         \
  do {                                                                             \
    const int sf_mpi_rc_ = (call);                                                 \
    if (sf_mpi_rc_ != 0 /* success */) {                                           \
      ::shardflow::internal::ThrowMpiError(sf_mpi_rc_, #call, __FILE__, __LINE__); \
    }                                                                              \
  } while (0)
