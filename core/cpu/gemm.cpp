#include "core/cpu/gemm.hpp"

#include <sched.h>
#include <xmmintrin.h>

#include <Eigen/Core>
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

}  // namespace

template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (g_threads.load(std::memory_order_relaxed) == 0) SetIntraOpThreads(0);
  MutMap<T> cm(c, m, n, Eigen::OuterStride<>(ldc));
  if (beta == T(0)) {
    cm.setZero();
  } else if (beta != T(1)) {
    cm *= beta;
  }
  if (k == 0) return;
  ConstMap<T> am(a, trans_a ? k : m, trans_a ? m : k, Eigen::OuterStride<>(lda));
  ConstMap<T> bm(b, trans_b ? n : k, trans_b ? k : n, Eigen::OuterStride<>(ldb));
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

void FlushDenormalsOnThisThread() {
  // MXCSR bit 15 (FTZ: results that would be denormal become 0) and bit 6 (DAZ: denormal
  // inputs read as 0).
  _mm_setcsr(_mm_getcsr() | 0x8040);
}

void SetIntraOpThreads(int n) {
  if (n <= 0) n = DefaultIntraOpThreads();
  g_threads = n;
  Eigen::setNbThreads(n);
  FlushDenormalsOnThisThread();
#pragma omp parallel num_threads(n)
  FlushDenormalsOnThisThread();
}

int IntraOpThreads() {
  const int n = g_threads.load();
  return n > 0 ? n : Eigen::nbThreads();
}

}  // namespace shardflow::cpu
