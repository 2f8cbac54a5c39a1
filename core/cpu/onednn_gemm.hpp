// oneDNN's sgemm for the float products where it measured faster than shardflow's own kernel
// (issue 25: "use the fastest per shape behind the compute backend"; docs/design.md decision 56).
// `shardflow-bench gemm` times Eigen's kernel, ours, oneDNN's and OpenBLAS's on every GEMM of the
// presets' training steps (BENCHMARKS.md "Library GEMMs"): ours was the fastest on every shape but
// a dense layer's forward over a long K and a wide N at batch 16-128 (the CNN's 3136 x 1024
// layer: oneDNN 210-223 GFLOP/s, ours 163-183 on the AVX-512 development machine).
//
// Threads and bits, as decision 53 for convolutions: C is cut into pieces of
// kLibraryGemmColumns columns, fixed by N alone; the pieces run on shardflow's intra-op pool,
// each a one-thread oneDNN call. So results do not depend on the thread count; they differ from
// shardflow's kernel in rounding only (another summation order).
#pragma once

#include <cstdint>

namespace shardflow::cpu {

inline constexpr int64_t kLibraryGemmColumns = 256;

// Whether the automatic choice (GemmKernel::kAuto) gives this float product to oneDNN: a build
// with oneDNN, an AVX-512 target (where it was measured), op(A) and op(B) not transposed,
// 16 <= M <= 128, N >= 512 and K >= 1024.
bool LibrarySgemmTakes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k);

// C = alpha A B + beta C (row-major, not transposed) through oneDNN in pieces as above. Returns
// false, touching nothing, in a build without oneDNN.
bool LibrarySgemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace shardflow::cpu
