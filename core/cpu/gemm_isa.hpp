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

// Which float GEMM kernel runs: by shape (kAuto, the default), Eigen's everywhere, or
// shardflow's own (SgemmAvx512 or SgemmAvx2, by the target) for every shape with K > 0. The default
// comes from SHARDFLOW_GEMM=auto|eigen|own (read on the first Gemm call; another value is an error
// there); SetGemmKernel overrides it for the process (tests and `shardflow-bench gemm` compare
// the kernels in one process). For double, Eigen's always.
enum class GemmKernel { kAuto, kEigen, kOwn };
void SetGemmKernel(GemmKernel kernel);
GemmKernel CurrentGemmKernel();

#if defined(__x86_64__)
#define SHARDFLOW_HAVE_GEMM_AVX512 1
// One block of C = alpha op(A) op(B) + beta C (core/cpu/gemm_block.hpp) built for x86-64-v4.
// REQUIRES: the CPU has AVX-512 F/BW/CD/DQ/VL.
template <typename T>
void GemmBlockAvx512(bool trans_a, bool trans_b, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                     int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
                     T* c, int64_t ldc);

// shardflow's own float GEMM kernel (core/cpu/sgemm_kernel.hpp): C in register tiles, op(B)
// in panels of kSgemmPanel* columns, A read in place. Each element of C is one chain of fused
// multiply-adds over k from zero, so any partition, thread count or target gives the same bits.
inline constexpr int64_t kSgemmPanelAvx512 = 64, kSgemmPanelAvx2 = 24;
struct SgemmArgs {
  bool trans_a = false;
  int64_t n = 0, k = 0;
  float alpha = 1, beta = 0;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;  // op(B) = B (not transposed), row stride ldb; or
  int64_t ldb = 0;
  const float* packed_b = nullptr;  // op(B) packed in the target's panels (then b is unused)
  float* c = nullptr;
  int64_t ldc = 0;
};
// Rows [r0, r1) of C, panels [p0, p1) (columns [p0 * panel, min(p1 * panel, n))).
// SgemmAvx512 REQUIRES: the CPU has AVX-512 F/BW/CD/DQ/VL; SgemmAvx2: AVX2 and FMA.
void SgemmAvx512(const SgemmArgs& g, int64_t r0, int64_t r1, int64_t p0, int64_t p1);
void SgemmAvx2(const SgemmArgs& g, int64_t r0, int64_t r1, int64_t p0, int64_t p1);
#endif

}  // namespace shardflow::cpu
