// SF_CHECK_H5(call): runs an HDF5 call returning herr_t or hid_t and throws Error(kIo) when it
// returns a negative value. The message names the call, the source line, the rank and the
// innermost entries of HDF5's own error stack, which is then cleared. HDF5's automatic printing
// of errors to stderr is switched off the first time any check runs, so a failure is reported
// once, by us, with context.
#pragma once

#include <hdf5.h>

#include "core/error.hpp"

namespace shardflow {

// Switches off HDF5's automatic error printing for this process (idempotent, thread-safe).
void SilenceHdf5Errors();

// Renders HDF5's current error stack (innermost first, at most a few entries) and clears it.
std::string TakeHdf5ErrorStack();

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
