// shardflow's own float GEMM kernel for AVX-512 (x86-64-v4): the instruction-set description
// core/cpu/sgemm_kernel.hpp is compiled with here. Chosen by core/cpu/gemm.cpp on CPUs with
// AVX-512 F/BW/CD/DQ/VL. Built with -march=x86-64-v4 (core/CMakeLists.txt); only SgemmAvx512
// has external linkage (CTest core.gemm_avx512_symbols).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#include "core/cpu/gemm_isa.hpp"

namespace shardflow::cpu {
namespace {

// 16 floats per zmm register, 32 registers: tiles of 6 x 64, 8 x 48, 12 x 32, 12 x 16 (at most
// 24 accumulators, the rest for the rows of B and the broadcast).
struct Avx512 {
  using Vec = __m512;
  using Mask = __mmask16;
  static constexpr int kLanes = 16;
  static constexpr int64_t kPanel = kSgemmPanelAvx512;
  static constexpr int RowsFor(int v) { return v == 4 ? 6 : (v == 3 ? 8 : 12); }
  static Vec Zero() { return _mm512_setzero_ps(); }
  static Vec Load(const float* p) { return _mm512_loadu_ps(p); }
  static Vec MaskLoad(Mask m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
  static Vec Set1(float x) { return _mm512_set1_ps(x); }
  static Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec Mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
  static void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
  static void MaskStore(float* p, Mask m, Vec v) { _mm512_mask_storeu_ps(p, m, v); }
  static Mask Full() { return Mask(0xFFFF); }
  static Mask TailMask(int tail) { return tail == 0 ? Full() : Mask((1u << tail) - 1); }
};

}  // namespace
}  // namespace shardflow::cpu

#include "core/cpu/sgemm_kernel.hpp"

namespace shardflow::cpu {

void SgemmAvx512(const SgemmArgs& g, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
  SgemmRows<Avx512>(g, r0, r1, p0, p1);
}

}  // namespace shardflow::cpu

#endif  // defined(__x86_64__)
