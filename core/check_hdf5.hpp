// SF_CHECK_H5(call): runs an HDF5 call returning herr_t or hid_t and throws an Error when it
// returns a negative value. The message says, in a user's terms, what failed ("cannot open the
// HDF5 file") and why, from HDF5's whole error stack (ClassifyHdf5Failure): the operating
// system's errno ("No space left on device (errno 28)", kIo), a truncated file, not an HDF5 file
// or damaged data (kDataLoss, exit 3, as shardflow-inspect says of such files), or else kIo;
// then the rank and the first entries of HDF5's stack, which is then cleared. HDF5's automatic
// printing of errors to stderr is switched off the first time any check runs, so a failure is
// reported once, by us, with context. The MPI bootstrap (core/mpi_env) knows nothing of HDF5, so
// programs built without HDF5, such as the SimGrid build in sim/smpi, can link it.
#pragma once

#include <hdf5.h>

#include <string>

#include "core/error.hpp"

namespace shardflow {

// Switches off HDF5's automatic error printing for this process (idempotent, thread-safe).
void SilenceHdf5Errors();

// Renders HDF5's current error stack (innermost first, at most a few entries) and clears it.
std::string TakeHdf5ErrorStack();

// The category and the user's-terms cause of a failure, from HDF5's error stack text.
struct Hdf5Failure {
  ErrorCode code;
  std::string cause;
};
Hdf5Failure ClassifyHdf5Failure(const std::string& stack);

namespace internal {
[[noreturn]] void ThrowHdf5Error(const char* call, const char* file, int line, ErrorContext ctx);
}  // namespace internal
}  // namespace shardflow

// Optional second argument: an ErrorContext (e.g. {.file = path, .key = dataset}).
#define SF_CHECK_H5(call, ...)                                                       \
  ([&]() {                                                                           \
    ::shardflow::SilenceHdf5Errors();                                                \
    const auto sf_h5_rc_ = (call);                                                   \
    if (sf_h5_rc_ < 0) {                                                             \
      ::shardflow::internal::ThrowHdf5Error(#call, __FILE__, __LINE__,               \
                                            ::shardflow::ErrorContext{__VA_ARGS__}); \
    }                                                                                \
    return sf_h5_rc_;                                                                \
  }())
