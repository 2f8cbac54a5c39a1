// Library GEMMs timed beside shardflow's own on a step's shapes (issue 25: "measure, per shape,
// our path against oneDNN and OpenBLAS for GEMM"): oneDNN's dnnl_sgemm (libdnnl-dev) and
// OpenBLAS's cblas_sgemm (libopenblas-openmp-dev), row-major float, as cpu::Gemm takes them.
// Benchmark only: the engine computes with cpu::Gemm (its results do not depend on the thread
// count; a library's need not) unless a measurement here shows a library winning on a step's
// shape. A library the build lacks reports false and is left out of the tables.
#pragma once

#include <cstdint>
#include <string>

namespace shardflow::bench {

enum class GemmLibrary { kOneDnn, kOpenBlas };
inline constexpr GemmLibrary kGemmLibraries[] = {GemmLibrary::kOneDnn, GemmLibrary::kOpenBlas};

const char* GemmLibraryName(GemmLibrary lib);
// Whether this build links the library.
bool GemmLibraryBuilt(GemmLibrary lib);
// What the library says of itself (OpenBLAS: its configuration and the core type it chose,
// which OPENBLAS_CORETYPE can force); "" when not built.
std::string GemmLibraryDescription(GemmLibrary lib);
// C = alpha op(A) op(B) + beta C on `threads` threads (the library's own OpenMP team); false
// when the library is not built. Throws when the library reports an error.
bool LibrarySgemm(GemmLibrary lib, int threads, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                  float alpha, const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                  float* c, int64_t ldc);

}  // namespace shardflow::bench
