// The CPU compute backend: shardflow::Backend implemented by the kernels of core/cpu (Eigen GEMM,
// im2col, and the loops of kernels.hpp). Every op forwards to one kernel call.
// Thread-safety: stateless; GEMM uses the intra-op threads of cpu::SetIntraOpThreads.
#pragma once

#include "core/backend/backend.hpp"

namespace shardflow::cpu {

// The process-wide CPU backend for T (float or double).
template <typename T>
Backend<T>& CpuBackend();

}  // namespace shardflow::cpu
