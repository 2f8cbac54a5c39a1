#include "core/cpu/onednn_gemm.hpp"

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

bool LibrarySgemmTakes(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k) {
#if defined(SHARDFLOW_HAVE_ONEDNN)
  return !trans_a && !trans_b && m >= 16 && m <= 128 && n >= 512 && k >= 1024 &&
         std::string(GemmTarget()).rfind("x86-64-v4", 0) == 0;
#else
  (void)trans_a, (void)trans_b, (void)m, (void)n, (void)k;
  return false;
#endif
}

bool LibrarySgemm(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#if defined(SHARDFLOW_HAVE_ONEDNN)
  const int64_t pieces = (n + kLibraryGemmColumns - 1) / kLibraryGemmColumns;
  std::atomic<int> failed{dnnl_success};  // a pool worker must not throw: the caller does
  RunPieces(pieces, [&](int64_t p) {
    const int64_t j0 = p * kLibraryGemmColumns;
    const int64_t width = n - j0 < kLibraryGemmColumns ? n - j0 : kLibraryGemmColumns;
    omp_set_num_threads(1);  // this pool thread's calls: one OpenMP thread, no second pool
    const dnnl_status_t st =
        dnnl_sgemm('N', 'N', m, width, k, alpha, a, lda, b + j0, ldb, beta, c + j0, ldc);
    if (st != dnnl_success) failed.store(st);
  });
  if (failed.load() != dnnl_success) {
    throw Error(ErrorCode::kInternal,
                "oneDNN's sgemm failed with status " + std::to_string(failed.load()) + " on " +
                    std::to_string(m) + " x " + std::to_string(n) + " x " + std::to_string(k));
  }
  return true;
#else
  (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda, (void)b, (void)ldb, (void)beta;
  (void)c, (void)ldc;
  return false;
#endif
}

}  // namespace shardflow::cpu
