#include "core/cpu/gemm.hpp"

#include "core/cpu/parallel.hpp"

#include <sched.h>
#include <xmmintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/cpu/gemm_isa.hpp"
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
    const char* env = std::getenv("SHARDFLOW_CPU_TARGET");
    const std::string want = env != nullptr ? env : "";
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

const char* GemmTarget() { return UseAvx512() ? "x86-64-v4 (AVX-512)" : "x86-64-v3 (AVX2)"; }

int DefaultIntraOpThreads() {
  // slurm/launch.sh sets SHARDFLOW_THREADS to the rank's share of the node's cores.
  if (const char* env = std::getenv("SHARDFLOW_THREADS"); env != nullptr && *env != '\0') {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
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
