// SF_CHECK_ZLIB(call, stream): runs a zlib call and throws Error(kDataLoss for data errors,
// kInternal otherwise) naming the call, the source line, zlib's error name and the stream's
// message when it returns anything but Z_OK, Z_STREAM_END or Z_BUF_ERROR (the last two are
// ordinary outcomes the caller handles). Returns the call's result.
#pragma once

#include <zlib.h>

#include "core/error.hpp"

namespace shardflow::internal {
[[noreturn]] void ThrowZlibError(int rc, const z_stream* stream, const char* call, const char* file,
                                 int line);
}  // namespace shardflow::internal

#define SF_CHECK_ZLIB(call, stream)                                                         \
  ([&]() {                                                                                  \
    const int sf_z_rc_ = (call);                                                            \
    if (sf_z_rc_ != Z_OK && sf_z_rc_ != Z_STREAM_END && sf_z_rc_ != Z_BUF_ERROR) {          \
      ::shardflow::internal::ThrowZlibError(sf_z_rc_, (stream), #call, __FILE__, __LINE__); \
    }                                                                                       \
    return sf_z_rc_;                                                                        \
  }())
