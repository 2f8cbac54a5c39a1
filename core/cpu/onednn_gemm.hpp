// oneDNN's sgemm for the float products where it measured faster than shardflow's own kernel
// (issue 25: "use the fastest per shape behind the compute backend"; docs/design.md decision 56).
// `shardflow-bench gemm` times Eigen's kernel, ours, oneDNN's and OpenBLAS's on every GEMM of the
// presets' training steps (BENCHMARKS.md "Library GEMMs"): ours was the fastest on every shape but
// a dense layer's forward over a long K and a wide N at batch 16-128 (the CNN's 3136 x 1024
// layer: oneDNN 210-223 GFLOP/s, ours 163-183 on the AVX-512 development machine).
//
// Threads and bits, as decision 53 for convolutions: C is cut into pieces fixed by M and N alone
// (LibraryGemmPiecesFor); the pieces run on shardflow's intra-op pool,
// each a one-thread oneDNN call. So results do not depend on the thread count; they differ from
// shardflow's kernel in rounding only (another summation order).
#pragma once

#include <cstdint>

namespace shardflow::cpu {

inline constexpr int64_t kLibraryGemmColumns = 256;

// The pieces of C, by shape alone: M >= 512 in row bands of about 256 rows (whole rows), 256 <=
// M < 512 in column bands of about 128 columns (multiples of 16), a smaller M (the wide dense
// layer) in kLibraryGemmColumns columns. Many even pieces keep 2-4 pool threads busy: bands of
// 256 columns left N = 384 as 256 + 128, a third of a 2-thread call idle (`shardflow-bench gemm
// --model gpt --threads 2`).
struct LibraryGemmPieces {
  int64_t rows = 0;
  int64_t cols = 0;
};
LibraryGemmPieces LibraryGemmPiecesFor(int64_t m, int64_t n);

// Whether the automatic choice (GemmKernel::kAuto) gives this float product to oneDNN: a build
// with oneDNN, an AVX-512 target (where it was measured), and either op(A) and op(B) not
// transposed with 16 <= M <= 128, N >= 512 and K >= 1024 (the wide dense layer), or M, N and K
// all >= 256, transposed or not (a transformer's projections and MLP over a batch of sequences:
// `shardflow-bench gemm --model gpt`, oneDNN 131-172 GFLOP/s against ours 86-148 on the
// development machine, BENCHMARKS.md "Transformers").
bool LibrarySgemmTakes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k);

// C = alpha op(A) op(B) + beta C (row-major; op transposes when asked) through oneDNN in pieces
// as above. Returns false, touching nothing, in a build without oneDNN.
bool LibrarySgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc);

}  // namespace shardflow::cpu
