// shardflow's own float GEMM kernel for AVX2 + FMA (x86-64-v3, what every shardflow binary is
// built for): the instruction-set description core/cpu/sgemm_kernel.hpp is compiled with here.
// Chosen by core/cpu/gemm.cpp on CPUs without AVX-512 (or with SHARDFLOW_CPU_TARGET=x86-64-v3).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#include "core/cpu/gemm_isa.hpp"

namespace shardflow::cpu {
namespace {

// 8 floats per ymm register, 16 registers: tiles of 4 x 24, 6 x 16, 12 x 8 (at most 12
// accumulators, the rest for the rows of B and the broadcast).
struct Avx2 {
  using Vec = __m256;
  using Mask = __m256i;  // lanes with the sign bit set are loaded and stored
  static constexpr int kLanes = 8;
  static constexpr int64_t kPanel = kSgemmPanelAvx2;
  static constexpr int RowsFor(int v) { return v == 3 ? 4 : (v == 2 ? 6 : 12); }
  static Vec Zero() { return _mm256_setzero_ps(); }
  static Vec Load(const float* p) { return _mm256_loadu_ps(p); }
  static Vec MaskLoad(Mask m, const float* p) { return _mm256_maskload_ps(p, m); }
  static Vec Set1(float x) { return _mm256_set1_ps(x); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec Mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
  static void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, Vec v) { _mm256_maskstore_ps(p, m, v); }
  static Mask Full() { return _mm256_set1_epi32(-1); }
  static Mask TailMask(int tail) {
    if (tail == 0) return Full();
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
};

}  // namespace
}  // namespace shardflow::cpu

#include "core/cpu/sgemm_kernel.hpp"

namespace shardflow::cpu {

void SgemmAvx2(const SgemmArgs& g, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
  SgemmRows<Avx2>(g, r0, r1, p0, p1);
}

}  // namespace shardflow::cpu

#endif  // defined(__x86_64__)
