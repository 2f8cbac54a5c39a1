#include "core/cpu/gemm.hpp"

#include "core/cpu/parallel.hpp"

#include <sched.h>
#include <xmmintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/cpu/gemm_isa.hpp"
#include "core/cpu/onednn_gemm.hpp"
#include "core/environment.hpp"
#include "core/error.hpp"

#define SHARDFLOW_GEMM_ISA v3
#include "core/cpu/gemm_block.hpp"

namespace shardflow::cpu {
namespace {

bool CpuHasAvx512() {
#if defined(SHARDFLOW_HAVE_GEMM_AVX512)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

// Chosen once: SHARDFLOW_CPU_TARGET, else the best the CPU has.
bool UseAvx512() {
  static const bool use = [] {
    const std::string want = env::Text("SHARDFLOW_CPU_TARGET").value_or("");
    const bool has = CpuHasAvx512();
    if (want.empty()) return has;
    if (want == "x86-64-v3") return false;
    if (want == "x86-64-v4") {
      if (!has) {
        throw Error(ErrorCode::kInvalidArgument,
                    "SHARDFLOW_CPU_TARGET=x86-64-v4 but this CPU has no AVX-512 (F/BW/CD/DQ/VL)",
                    {.hint = "unset it, or set x86-64-v3"});
      }
      return true;
    }
    throw Error(ErrorCode::kInvalidArgument, "unknown SHARDFLOW_CPU_TARGET '" + want + "'",
                {.hint = "x86-64-v3 or x86-64-v4, or unset for the best this CPU has"});
  }();
  return use;
}

template <typename T>
void GemmBlock(bool trans_a, bool trans_b, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
               int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
               int64_t ldc) {
#if defined(SHARDFLOW_HAVE_GEMM_AVX512)
  if (UseAvx512()) {
    GemmBlockAvx512(trans_a, trans_b, r0, r1, c0, c1, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#endif
  v3::GemmBlock(trans_a, trans_b, r0, r1, c0, c1, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

GemmKernel KernelFromEnv() {
  const std::string want = env::Text("SHARDFLOW_GEMM").value_or("");
  if (want.empty() || want == "auto") return GemmKernel::kAuto;
  if (want == "eigen") return GemmKernel::kEigen;
  if (want == "own") return GemmKernel::kOwn;
  throw Error(ErrorCode::kInvalidArgument, "unknown SHARDFLOW_GEMM '" + want + "'",
              {.hint = "auto, eigen or own, or unset for auto"});
}
std::atomic<int> g_kernel{-1};  // -1: not chosen yet (SHARDFLOW_GEMM on the first call)

#if defined(SHARDFLOW_HAVE_GEMM_AVX512)
// The float shapes shardflow's kernel takes, from `shardflow-bench gemm` on the presets' layers
// against Eigen's kernel of the same target (BENCHMARKS.md, "Own AVX-512 GEMM kernel" and "The
// AVX2 twin"): on AVX-512 every shape with at least 16 rows (smaller ones, batch-1 serving,
// stay with Eigen); on AVX2 only the narrow ones (N <= 32, B not transposed: first convolutions
// and classifier heads, 1.18-2.03x), since on wide products Eigen's packed AVX2 kernel runs
// near the core's peak and ours, reading 24-column panels of B, ran 0.67-1.08x of it.
bool UseOwnSgemm(int64_t m, int64_t n, int64_t k, bool trans_b) {
  if (k == 0) return false;
  switch (CurrentGemmKernel()) {
    case GemmKernel::kEigen:
      return false;
    case GemmKernel::kOwn:
      return true;
    case GemmKernel::kAuto:
      break;
  }
  return m >= 16 && (UseAvx512() || (n <= 32 && !trans_b));
}

// The kernel of the chosen target and its panel shape.
struct OwnTarget {
  void (*rows)(const SgemmArgs&, int64_t, int64_t, int64_t, int64_t);
  int64_t panel, lanes;
  int64_t Panels(int64_t n) const { return (n + panel - 1) / panel; }
};
OwnTarget Own() {
  if (UseAvx512()) return {SgemmAvx512, kSgemmPanelAvx512, 16};
  return {SgemmAvx2, kSgemmPanelAvx2, 8};
}

// op(B) = B^T, B (N, K) with row stride ldb, into the kernel's panels: panel p holds K rows of
// its width rounded up to whole vectors (zeros past column n), after p full panels.
void PackTransposedB(const OwnTarget& t, int64_t n, int64_t k, const float* b, int64_t ldb,
                     float* out) {
  for (int64_t j0 = 0; j0 < n; j0 += t.panel) {
    const int64_t width = std::min(t.panel, n - j0);
    const int64_t padded = (width + t.lanes - 1) / t.lanes * t.lanes;
    float* panel = out + j0 * k;
    for (int64_t kk = 0; kk < k; ++kk) {
      float* row = panel + kk * padded;
      for (int64_t j = 0; j < width; ++j) row[j] = b[(j0 + j) * ldb + kk];
      for (int64_t j = width; j < padded; ++j) row[j] = 0.0f;
    }
  }
}

// Runs the kernel over the intra-op threads: pieces of whole 24-row groups (a multiple of every
// tile's rows) or of panels (the result is the same for any partition). Rows, when there are
// enough of them, unless panels read fewer floats from beyond the cache: every row piece
// streams all of op(B), while a panel piece streams its panels once per block of the kernel's
// 96 rows and all of op(A). A dense layer's forward at batch 128 (op(B) its 3136 x 1024
// weights) ran 1.21x faster on 2 threads than on 1 by rows: six pieces read 12.8 MB each.
void RunSgemm(const OwnTarget& t, const SgemmArgs& g, int64_t m) {
  constexpr int64_t kKernelRowBlock = 96;  // sgemm_kernel.hpp: kRowBlock
  const int64_t panels = t.Panels(g.n);
  const int64_t threads = IntraOpThreads(), groups = (m + 23) / 24;
  const int64_t row_pieces = std::min(groups, 4 * threads);
  const int64_t panel_pieces = std::min(panels, 4 * threads);
  const int64_t b_floats = g.k * g.n, a_floats = m * g.k;
  const bool panels_read_less =
      panel_pieces >= 2 * threads &&
      (m + kKernelRowBlock - 1) / kKernelRowBlock * b_floats + panel_pieces * a_floats <
          row_pieces * b_floats + a_floats;
  if (threads == 1 || 2 * m * g.n * g.k < (int64_t{1} << 21)) {
    t.rows(g, 0, m, 0, panels);
  } else if (groups >= 2 * threads && !panels_read_less) {
    const int64_t pieces = row_pieces;
    RunPieces(pieces, [&](int64_t p) {
      t.rows(g, std::min(m, groups * p / pieces * 24), std::min(m, groups * (p + 1) / pieces * 24),
             0, panels);
    });
  } else {
    const int64_t pieces = panel_pieces;
    RunPieces(pieces,
              [&](int64_t p) { t.rows(g, 0, m, panels * p / pieces, panels * (p + 1) / pieces); });
  }
}

// A product with few outputs and a long K (a first convolution's weight gradient: 25 x 32 over
// 41,552 im2col rows per chunk) has no rows or panels to share between threads: K is cut into
// slices of kKSlice (by the shape, never the thread count), each slice's product formed from
// zero, and the slices summed in order, then alpha and beta applied: one result on any thread
// count (each element is a chain per slice, not one chain over K).
constexpr int64_t kKSlice = 4096;
bool SlicesK(int64_t m, int64_t n, int64_t k) { return m * n <= 64 * 64 && k >= 4 * kKSlice; }

void SlicedKSgemm(const OwnTarget& t, const SgemmArgs& g, int64_t m) {
  const int64_t slices = (g.k + kKSlice - 1) / kKSlice, mn = m * g.n;
  std::vector<float> partial(static_cast<size_t>(slices * mn));
  RunPieces(slices, [&](int64_t s) {
    const int64_t k0 = s * kKSlice;
    SgemmArgs p = g;
    p.k = std::min(kKSlice, g.k - k0);
    p.alpha = 1.0f;
    p.beta = 0.0f;
    p.a = g.trans_a ? g.a + k0 * g.lda : g.a + k0;
    p.b = g.b + k0 * g.ldb;
    p.c = partial.data() + s * mn;
    p.ldc = g.n;
    t.rows(p, 0, m, 0, t.Panels(g.n));
  });
  for (int64_t i = 0; i < m; ++i) {
    float* row = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.n; ++j) {
      float sum = partial[static_cast<size_t>(i * g.n + j)];
      for (int64_t s = 1; s < slices; ++s)
        sum += partial[static_cast<size_t>(s * mn + i * g.n + j)];
      const float out = g.alpha * sum;
      row[j] = g.beta != 0.0f ? std::fma(g.beta, row[j], out) : out;
    }
  }
}

// C = alpha op(A) op(B) + beta C with shardflow's kernel. A transposed B must be packed
// (K * N floats moved) unless the product is computed transposed, D = B op(A)^T (N x M; only
// op(A), M * K floats, is packed when A is not transposed), and D written into C transposed
// (M * N): chosen when that moves fewer floats, as for a dense layer's input gradient (M = the
// batch, N * K = its weights). Either way each element is the same chain of fused
// multiply-adds, and alpha and beta are applied as the kernel applies them.
void OwnSgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
              const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
              int64_t ldc) {
  const OwnTarget t = Own();
  thread_local std::vector<float> packed, transposed;
  const auto pack = [&](int64_t cols, const float* src, int64_t ld) {
    packed.resize(static_cast<size_t>(t.Panels(cols) * t.panel * k));
    PackTransposedB(t, cols, k, src, ld, packed.data());
    return packed.data();
  };
  if (!trans_b || n * k <= (trans_a ? 0 : m * k) + m * n) {
    SgemmArgs g{.trans_a = trans_a,
                .n = n,
                .k = k,
                .alpha = alpha,
                .beta = beta,
                .a = a,
                .lda = lda,
                .b = b,
                .ldb = ldb,
                .c = c,
                .ldc = ldc};
    if (trans_b) {
      g.packed_b = pack(n, b, ldb);
    } else if (SlicesK(m, n, k)) {
      SlicedKSgemm(t, g, m);
      return;
    }
    RunSgemm(t, g, m);
    return;
  }
  // D (N x M) = B (N x K, as stored) times op(A)^T (K x M): A (K x M) as stored when trans_a.
  transposed.resize(static_cast<size_t>(n * m));
  SgemmArgs g{.trans_a = false,
              .n = m,
              .k = k,
              .alpha = 1.0f,
              .beta = 0.0f,
              .a = b,
              .lda = ldb,
              .b = a,
              .ldb = lda,
              .c = transposed.data(),
              .ldc = m};
  if (!trans_a) g.packed_b = pack(m, a, lda);
  RunSgemm(t, g, n);
  const float* d = transposed.data();
  for (int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    for (int64_t j = 0; j < n; ++j) {
      const float out = alpha * d[j * m + i];
      row[j] = beta != 0.0f ? std::fma(beta, row[j], out) : out;
    }
  }
}
#endif

std::atomic<int> g_threads{0};  // 0: not set yet

// Blocks of C from the shape alone (never the thread count, so results do not depend on it):
// products under ~2 MFLOP are one block; otherwise the longer side of C is cut into up to 8
// blocks of at least 64 rows or columns, on multiples of 16 (whole AVX-512 vectors of float).
struct Blocking {
  bool rows = true;
  int64_t count = 1, size = 0;
};
Blocking BlocksOf(int64_t m, int64_t n, int64_t k) {
  Blocking bl;
  bl.rows = m >= n;
  const int64_t side = bl.rows ? m : n;
  bl.size = side;
  if (2 * m * n * k < (int64_t{1} << 21)) return bl;
  const int64_t want = std::clamp<int64_t>(side / 64, 1, 8);
  bl.size = ((side + want - 1) / want + 15) / 16 * 16;
  bl.count = (side + bl.size - 1) / bl.size;
  return bl;
}

}  // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (g_threads.load(std::memory_order_relaxed) == 0) SetIntraOpThreads(0);
  UseAvx512();  // chosen (or refused) here, on the caller's thread, not in a pool worker
#if defined(SHARDFLOW_HAVE_GEMM_AVX512)
  if constexpr (std::is_same_v<T, float>) {
    if (CurrentGemmKernel() == GemmKernel::kAuto && LibrarySgemmTakes(trans_a, trans_b, m, n, k) &&
        LibrarySgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)) {
      return;
    }
    if (UseOwnSgemm(m, n, k, trans_b)) {
      OwnSgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      return;
    }
  }
#endif
  const Blocking bl = BlocksOf(m, n, k);
  const auto block = [&](int64_t i) {
    const int64_t lo = i * bl.size, hi = std::min((i + 1) * bl.size, bl.rows ? m : n);
    if (bl.rows) {
      GemmBlock(trans_a, trans_b, lo, hi, 0, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    } else {
      GemmBlock(trans_a, trans_b, 0, m, lo, hi, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
  };
  if (bl.count == 1) {
    block(0);
  } else {
    RunPieces(bl.count, block);
  }
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                          const float*, int64_t, float, float*, int64_t);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*, int64_t,
                           const double*, int64_t, double, double*, int64_t);

template <typename T>
void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  GemmBlock(trans_a, trans_b, 0, m, 0, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

template void GemmSerial<float>(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t,
                                const float*, int64_t, float, float*, int64_t);
template void GemmSerial<double>(bool, bool, int64_t, int64_t, int64_t, double, const double*,
                                 int64_t, const double*, int64_t, double, double*, int64_t);

void SetGemmKernel(GemmKernel kernel) { g_kernel = static_cast<int>(kernel); }

GemmKernel CurrentGemmKernel() {
  int k = g_kernel.load(std::memory_order_relaxed);
  if (k < 0) {
    k = static_cast<int>(KernelFromEnv());
    int unset = -1;
    if (!g_kernel.compare_exchange_strong(unset, k)) k = unset;
  }
  return static_cast<GemmKernel>(k);
}

const char* GemmTarget() { return UseAvx512() ? "x86-64-v4 (AVX-512)" : "x86-64-v3 (AVX2)"; }

int DefaultIntraOpThreads() {
  // slurm/launch.sh sets SHARDFLOW_THREADS to the rank's share of the node's cores.
  if (const int64_t n = env::Int("SHARDFLOW_THREADS", 0, 1); n > 0) return static_cast<int>(n);
  return std::max(1, BoundCores());
}

int DefaultThreadsPerRank(int local_ranks) {
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int bound = BoundCores();  // 0 when unknown: the node's share below
  if (bound > 0 && bound < machine) return bound;
  return std::max(1, machine / std::max(1, local_ranks));
}

int BoundCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

void FlushDenormalsOnThisThread() {
  // MXCSR bit 15 (FTZ: results that would be denormal become 0) and bit 6 (DAZ: denormal
  // inputs read as 0).
  _mm_setcsr(_mm_getcsr() | 0x8040);
}

void SetIntraOpThreads(int n) {
  if (n <= 0) n = DefaultIntraOpThreads();
  g_threads = n;
  Eigen::setNbThreads(1);  // the pool (core/cpu/parallel.hpp) runs Gemm's blocks in parallel
  FlushDenormalsOnThisThread();
  SetPoolWorkers(n - 1);
}

int IntraOpThreads() {
  const int n = g_threads.load();
  return n > 0 ? n : 1;
}

}  // namespace shardflow::cpu
