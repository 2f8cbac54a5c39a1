// The GEMM block for CPUs with AVX-512 (x86-64-v4), chosen at run time by core/cpu/gemm.cpp.
//
// This file alone is compiled with -march=x86-64-v4 (core/CMakeLists.txt). Eigen is included
// under another namespace name, so none of its templates and inline functions, compiled here
// with AVX-512 instructions, share a symbol with the x86-64-v3 copies the rest of the program
// uses: with the same names the linker would keep one copy of each for the whole program, and
// an AVX-2-only CPU could end up running this file's. CTest core.gemm_avx512_symbols checks
// that the object defines no weak symbol outside these namespaces. Eigen's own threading is off
// here (intra-op threads come from core/cpu/parallel.hpp, as for the x86-64-v3 copy).
#if defined(__x86_64__)
#define EIGEN_DONT_PARALLELIZE
#define Eigen EigenAvx512  // NOLINT: renames the namespace for this translation unit only

#include <Eigen/Core>

#include "core/cpu/gemm_isa.hpp"

#define SHARDFLOW_GEMM_ISA v4
#include "core/cpu/gemm_block.hpp"

namespace shardflow::cpu {

template <typename T>
void GemmBlockAvx512(bool trans_a, bool trans_b, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                     int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
                     T* c, int64_t ldc) {
  v4::GemmBlock(trans_a, trans_b, r0, r1, c0, c1, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template void GemmBlockAvx512<float>(bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t, float,
                                     const float*, int64_t, const float*, int64_t, float, float*,
                                     int64_t);
template void GemmBlockAvx512<double>(bool, bool, int64_t, int64_t, int64_t, int64_t, int64_t,
                                      double, const double*, int64_t, const double*, int64_t,
                                      double, double*, int64_t);

}  // namespace shardflow::cpu

#endif  // defined(__x86_64__)
