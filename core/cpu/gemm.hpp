// Dense matrix multiply on the CPU: shardflow's own kernel (core/cpu/sgemm_kernel.hpp) for
// float shapes of 16 rows or more on AVX-512 CPUs and for narrow ones on AVX2, Eigen's
// otherwise (core/cpu/gemm.cpp, UseOwnSgemm), and oneDNN's sgemm for the one kind of shape it
// measured faster on (core/cpu/onednn_gemm.hpp); the one place the training kernels reach Eigen.
// Keeping Eigen behind this small interface means only gemm.cpp pays Eigen's compile time; layers
// include this header and stay fast to build.
#pragma once

#include <cstdint>

namespace shardflow::cpu {

// C = alpha * op(A) * op(B) + beta * C, all row-major.
//   op(A) is (M, K): A is (M, K) with row stride lda, or (K, M) when trans_a.
//   op(B) is (K, N): B is (K, N) with row stride ldb, or (N, K) when trans_b.
//   C is (M, N) with row stride ldc.
// beta = 0 overwrites C (its old contents may be garbage, even NaN). M, N or K may be 0.
// Instantiated for float and double. Threads: as many as SetIntraOpThreads allows.
template <typename T>
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
          int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// The same product on the calling thread alone, through Eigen's packed kernel: for kernels that
// run their own pieces on the pool and multiply small blocks inside them (attention,
// core/cpu/attention.hpp), where a nested Gemm would only find the pool busy.
template <typename T>
void GemmSerial(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc);

// Intra-op threads for kernels: Gemm cuts C into blocks by shape alone (each element sums over
// k in the same order whatever the thread count, so results do not depend on it) and runs them
// on the caller and the worker pool of core/cpu/parallel.hpp, as do the conv and pooling
// kernels. n <= 0 selects DefaultIntraOpThreads(), which is also what the first Gemm call uses
// when nothing was set. Ranks that share cores (more ranks than cores, no binding) should set 1.
// Measured with `shardflow-bench step --threads 1|2` on the 2-core build machine: when both
// cores were free, 2 threads gave 1.6x the MLP's samples/s (77k vs 47k); when another process
// competed, 0.3x with the OpenMP team Eigen used before (spin-waiting workers preempted; the
// pool's caller does not wait for a worker that has not started).
// It also switches on flush-to-zero and denormals-are-zero (FTZ/DAZ) on the calling thread and
// on the pool's workers, as TensorFlow does: denormal floats (Adam's second moments, vanishing
// gradients) otherwise take slow microcode paths on x86. Threads created later that run kernels
// should call FlushDenormalsOnThisThread().
void SetIntraOpThreads(int n);
void FlushDenormalsOnThisThread();
int IntraOpThreads();
// The number of cores this process may run on (sched_getaffinity), at least 1.
int DefaultIntraOpThreads();
// Intra-op threads for one of `local_ranks` ranks on a node when the user set none: the cores
// the launcher bound this rank to (mpirun --bind-to core, srun --cpu-bind) when it is bound to
// fewer than the machine has; otherwise, unbound, the machine's cores divided among the node's
// ranks. At least 1. (Dividing the machine's count alone gave a rank bound to one core two
// threads, which time-slice on that core: 7.7x slower prediction at 1 rank.)
int DefaultThreadsPerRank(int local_ranks);
// The CPUs this process may run on (sched_getaffinity); 0 when that cannot be read. A launcher
// that binds a rank to one core (mpirun does for 2 ranks or fewer) makes this 1, whatever
// train.threads asks for.
int BoundCores();

}  // namespace shardflow::cpu
