// Matrix products with bf16 inputs and float accumulation on the CPU, through oneDNN's matmul
// (docs/design.md decision 69): A and B are rounded to bf16 (8-bit mantissa, round to nearest
// even, as oneDNN and PyTorch round), multiplied on the matrix units oneDNN finds at run time
// (AMX tiles: brg:avx512_core_amx_bf16; AVX512-BF16's dot products: brg:avx512_core_bf16) and
// summed in float into a float C. This is what PyTorch's CPU autocast and Keras'
// mixed_bfloat16 do to a matmul, except that C stays float (their outputs are bf16).
//
// Threads and bits as LibrarySgemm (core/cpu/onednn_gemm.hpp): C is cut into pieces of
// kBf16GemmColumns columns, fixed by N alone, each a one-thread oneDNN call on shardflow's
// intra-op pool, so results do not depend on the thread count.
// Thread-safety: any threads; primitives are cached under a lock and run concurrently.
#pragma once

#include <cstdint>
#include <string>

#include "core/cpu/bf16_round.hpp"  // FromFloat, ToFloat, RoundRows

namespace shardflow::bf16 {

inline constexpr int64_t kBf16GemmColumns = 256;

// "" when this build and CPU run bf16 products natively (oneDNN's ISA has AVX512-BF16 or
// AMX-BF16); otherwise why not, in words that name what is missing ("this CPU has neither
// AVX512-BF16 nor AMX-BF16 (oneDNN's best ISA here: avx2)").
std::string CpuUnsupported();
// Whether oneDNN's ISA here has AMX-BF16 tiles (the matrix units), not only AVX512-BF16.
bool CpuHasMatrixUnits();
// oneDNN's implementation of a bf16 product on this CPU ("brg:avx512_core_bf16"), as its
// verbose mode names it; "" when unsupported.
std::string CpuKernelName();

// C = alpha op(A) op(B) + beta C as cpu::Gemm (core/cpu/gemm.hpp), with op(A) and op(B) rounded
// to bf16 and their products summed in float. Throws Error(kInvalidArgument) when CpuUnsupported()
// says why, Error(kInternal) when oneDNN fails.
void CpuGemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc);

}  // namespace shardflow::bf16
