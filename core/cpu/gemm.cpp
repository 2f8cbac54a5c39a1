#include "core/cpu/gemm.hpp"

#include "core/cpu/parallel.hpp"

#include <sched.h>
#include <xmmintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

namespace shardflow::cpu {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using MutMap = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

std::atomic<int> g_threads{0};  // 0: not set yet

// One block of C: rows [r0, r1) and columns [c0, c1) of the whole product, on this thread.
template <typename T>
void GemmBlock(bool trans_a, bool trans_b, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
               int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
               int64_t ldc) {
  const int64_t m = r1 - r0, n = c1 - c0;
  MutMap<T> cm(c + r0 * ldc + c0, m, n, Eigen::OuterStride<>(ldc));
  if (beta == T(0)) {
    cm.setZero();
  } else if (beta != T(1)) {
    cm *= beta;
  }
  if (k == 0) return;
  const T* ab = trans_a ? a + r0 : a + r0 * lda;
  const T* bb = trans_b ? b + c0 * ldb : b + c0;
  ConstMap<T> am(ab, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
  ConstMap<T> bm(bb, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
  // Four branches so Eigen sees each transpose statically and calls its packed GEMM directly.
  if (!trans_a && !trans_b) {
    cm.noalias() += alpha * am * bm;
  } else if (trans_a && !trans_b) {
    cm.noalias() += alpha * am.transpose() * bm;
  } else if (!trans_a && trans_b) {
    cm.noalias() += alpha * am * bm.transpose();
  } else {
    cm.noalias() += alpha * am.transpose() * bm.transpose();
  }
}

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

int DefaultIntraOpThreads() {
  // slurm/launch.sh sets SHARDFLOW_THREADS to the rank's share of the node's cores.
  if (const char* env = std::getenv("SHARDFLOW_THREADS"); env != nullptr && *env != '\0') {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  const int n = CPU_COUNT(&set);
  return n > 0 ? n : 1;
}

int DefaultThreadsPerRank(int local_ranks) {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int bound = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : machine;
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
