// DeviceMirror: a Backend<T> over host memory that runs every op on the CUDA backend. Each
// call copies the op's operands to device buffers, runs the op there, and copies the outputs
// back. The GPU suite installs it where the host-twin tests install the twin, so the same test
// bodies (tests/core/host_twin_test.cpp, compiled again with SF_TEST_DEVICE_MIRROR) check the
// CUDA backend op by op and train whole models on the GPU against the CPU backend. Slow (two
// copies per op) and only for tests.
// Thread-safety: one call at a time.
#pragma once

#include "core/backend/backend.hpp"

namespace shardflow::cuda::testing {

// Installs the CUDA backend on device 0 (once) and returns the mirror for T.
// REQUIRES: a usable GPU (GpuAvailable()).
template <typename T>
Backend<T>& DeviceMirror();

// Whether a usable GPU is visible; `why` gets the reason when not.
bool GpuAvailable(std::string* why);

}  // namespace shardflow::cuda::testing
