// Intra-op parallel loops for the CPU kernels: split [0, n) into contiguous blocks over the
// intra-op threads (cpu::IntraOpThreads, core/cpu/gemm.hpp) with OpenMP.
//
// Kernels use it only where each output element is written by exactly one iteration, computed
// in the same order whatever the thread count, so results never depend on it (the guarantee of
// cpu::Gemm). A call from inside a parallel region, or with one thread or too little work
// (n < 2 * grain), runs inline on the caller.
// Thread-safety: fn is called concurrently from the team's threads on disjoint ranges.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "core/cpu/gemm.hpp"

namespace shardflow::cpu {

// fn(begin, end) for disjoint ranges covering [0, n). grain: the fewest iterations worth a
// thread of their own.
template <typename Fn>
void ParallelFor(int64_t n, int64_t grain, const Fn& fn) {
  if (n <= 0) return;
  const int64_t most = n / std::max<int64_t>(grain, 1);
  const int threads = static_cast<int>(std::min<int64_t>(IntraOpThreads(), most));
  if (threads <= 1 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t begin = n * t / nt, end = n * (t + 1) / nt;
    if (begin < end) fn(begin, end);
  }
}

}  // namespace shardflow::cpu
