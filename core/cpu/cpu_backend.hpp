// The CPU compute backend: shardflow::Backend implemented by the kernels of core/cpu (Eigen GEMM,
// im2col, and the loops of kernels.hpp). Every op forwards to one kernel call.
// The convolution choice (SHARDFLOW_CONV: Winograd, oneDNN or im2col + GEMM; onednn_conv.hpp) is
// read here and in the kernels it picks, nowhere else: it is the CPU backend's own.
// Thread-safety: stateless; GEMM uses the intra-op threads of cpu::SetIntraOpThreads.
#pragma once

#include "core/backend/backend.hpp"
#include "core/backend/device_runtime.hpp"

namespace shardflow::cpu {

// The process-wide CPU backend for T (float or double).
template <typename T>
Backend<T>& CpuBackend();

// The CPU's device runtime (core/backend/device_runtime.hpp): both backends, host memory
// (DeviceFeature::kHostMemory), no staging, no collectives. Registered from the start; a test
// that replaces it registers this again.
const DeviceRuntime& CpuRuntime();

}  // namespace shardflow::cpu
