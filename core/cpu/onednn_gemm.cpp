#include "core/cpu/onednn_gemm.hpp"

#include <algorithm>
#include <atomic>
#include <string>

#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/parallel.hpp"
#include "core/error.hpp"

#if defined(SHARDFLOW_HAVE_ONEDNN)
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>
#endif

namespace shardflow::cpu {

LibraryGemmPieces LibraryGemmPiecesFor(int64_t m, int64_t n) {
  if (m >= 512) return {.rows = (m + (m + 255) / 256 - 1) / ((m + 255) / 256), .cols = n};
  if (m >= 256) {
    const int64_t pieces = (n + 127) / 128;
    return {.rows = m, .cols = ((n + pieces - 1) / pieces + 15) / 16 * 16};
  }
  return {.rows = m, .cols = kLibraryGemmColumns};
}

bool LibrarySgemmTakes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
#if defined(SHARDFLOW_HAVE_ONEDNN)
  const bool wide_dense = !trans_a && !trans_b && m >= 16 && m <= 128 && n >= 512 && k >= 1024;
  const bool large = m >= 256 && n >= 256 && k >= 256;
  return (wide_dense || large) && std::string(GemmTarget()).rfind("x86-64-v4", 0) == 0;
#else
  (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k;
  return false;
#endif
}

bool LibrarySgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                  const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                  int64_t ldc) {
#if defined(SHARDFLOW_HAVE_ONEDNN)
  const LibraryGemmPieces g = LibraryGemmPiecesFor(m, n);
  const int64_t row_pieces = (m + g.rows - 1) / g.rows, col_pieces = (n + g.cols - 1) / g.cols;
  std::atomic<int> failed{dnnl_success};  // a pool worker must not throw: the caller does
  RunPieces(row_pieces * col_pieces, [&](int64_t p) {
    const int64_t i0 = p / col_pieces * g.rows, j0 = p % col_pieces * g.cols;
    const int64_t height = std::min(g.rows, m - i0), width = std::min(g.cols, n - j0);
    omp_set_num_threads(1);  // this pool thread's calls: one OpenMP thread, no second pool
    // op(A)'s rows [i0, i0 + height) and op(B)'s columns [j0, j0 + width).
    const float* ai = trans_a ? a + i0 : a + i0 * lda;
    const float* bj = trans_b ? b + j0 * ldb : b + j0;
    const dnnl_status_t st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', height, width, k,
                                        alpha, ai, lda, bj, ldb, beta, c + i0 * ldc + j0, ldc);
    if (st != dnnl_success) failed.store(st);
  });
  if (failed.load() != dnnl_success) {
    throw Error(ErrorCode::kInternal,
                "oneDNN's sgemm failed with status " + std::to_string(failed.load()) + " on " +
                    std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
  }
  return true;
#else
  (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
  (void)b, (void)ldb, (void)beta;
  (void)c, (void)ldc;
  return false;
#endif
}

}  // namespace shardflow::cpu
