#include "apps/bench/library_gemm.hpp"

#include "core/error.hpp"

#include <omp.h>

#if defined(SHARDFLOW_HAVE_ONEDNN)
#include <oneapi/dnnl/dnnl.h>
#endif
#if defined(SHARDFLOW_HAVE_OPENBLAS)
#include <cblas.h>
#endif

namespace shardflow::bench {

const char* GemmLibraryName(GemmLibrary lib) {
  return lib == GemmLibrary::kOneDnn ? "onednn" : "openblas";
}

bool GemmLibraryBuilt(GemmLibrary lib) {
#if defined(SHARDFLOW_HAVE_ONEDNN)
  if (lib == GemmLibrary::kOneDnn) return true;
#endif
#if defined(SHARDFLOW_HAVE_OPENBLAS)
  if (lib == GemmLibrary::kOpenBlas) return true;
#endif
  (void)lib;
  return false;
}

std::string GemmLibraryDescription(GemmLibrary lib) {
  if (!GemmLibraryBuilt(lib)) return "";
#if defined(SHARDFLOW_HAVE_OPENBLAS)
  if (lib == GemmLibrary::kOpenBlas) {
    return std::string(openblas_get_config()) + ", core " + openblas_get_corename();
  }
#endif
#if defined(SHARDFLOW_HAVE_ONEDNN)
  if (lib == GemmLibrary::kOneDnn) {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch);
  }
#endif
  return "";
}

bool LibrarySgemm(GemmLibrary lib, int threads, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                  float* c, int64_t ldc) {
  (void)threads, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha, (void)a, (void)lda;
  (void)b, (void)ldb, (void)beta, (void)c, (void)ldc;
#if defined(SHARDFLOW_HAVE_ONEDNN)
  if (lib == GemmLibrary::kOneDnn) {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    const dnnl_status_t st =
        dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    omp_set_num_threads(before);
    if (st != dnnl_success) {
      throw Error(ErrorCode::kInternal, "dnnl_sgemm failed with status " + std::to_string(st));
    }
    return true;
  }
#endif
#if defined(SHARDFLOW_HAVE_OPENBLAS)
  if (lib == GemmLibrary::kOpenBlas) {
    // OpenBLAS's OpenMP build sets the caller's OpenMP thread count too: put it back after, so
    // that oneDNN's convolutions timed next keep their one thread per piece.
    const int before = omp_get_max_threads();
    openblas_set_num_threads(threads);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                static_cast<blasint>(m), static_cast<blasint>(n), static_cast<blasint>(k), alpha, a,
                static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
                static_cast<blasint>(ldc));
    openblas_set_num_threads(before);
    omp_set_num_threads(before);
    return true;
  }
#endif
  (void)lib;
  return false;
}

}  // namespace shardflow::bench
