// Instruction-set targets of the CPU GEMM (issue 25's runtime dispatch): the x86-64-v3 build
// every binary has, and an x86-64-v4 (AVX-512) copy of the GEMM block chosen once at start-up
// when the CPU has AVX-512 F/BW/CD/DQ/VL. Eigen's AVX-512 kernels ran 1.5-1.8x the AVX2 ones on
// the CNN's and MLP's shapes on the development machine (BENCHMARKS.md, "Runtime dispatch").
// SHARDFLOW_CPU_TARGET=x86-64-v3 forces the AVX2 copy (tests run both); =x86-64-v4 on a CPU
// without AVX-512 is an error. Not a public header: layers call cpu::Gemm.
#pragma once

#include <cstdint>

namespace shardflow::cpu {

// "x86-64-v4 (AVX-512)" or "x86-64-v3 (AVX2)": the target Gemm uses in this process, chosen on
// the first call (SHARDFLOW_CPU_TARGET, else the best the CPU supports). Throws Error
// (kInvalidArgument) naming the variable for an unknown value or an unsupported target.
const char* GemmTarget();

#if defined(__x86_64__)
#define SHARDFLOW_HAVE_GEMM_AVX512 1
// One block of C = alpha op(A) op(B) + beta C (core/cpu/gemm_block.hpp) built for x86-64-v4.
// REQUIRES: the CPU has AVX-512 F/BW/CD/DQ/VL.
template <typename T>
void GemmBlockAvx512(bool trans_a, bool trans_b, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                     int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
                     T* c, int64_t ldc);
#endif

}  // namespace shardflow::cpu
