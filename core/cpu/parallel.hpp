// Intra-op parallelism of the CPU kernels: a small pool of worker threads that help the calling
// thread run the pieces of one kernel call (GEMM blocks, im2col rows, pooling images).
//
// Why not OpenMP (which Eigen's GEMM used before): an OpenMP team ends every parallel region at
// a barrier that waits for all of its threads, so on a shared machine one preempted worker
// stalls the whole call for a scheduler time slice; 1 rank x 2 threads then trained the MLP at
// a twentieth of 2 ranks x 1 thread under load (bench/compute.sh). Here the caller runs pieces
// itself and waits only for pieces a worker has already claimed: a worker that has not woken
// up claims nothing, and the caller finishes alone. Idle workers spin ~0.1 ms, then sleep.
// Pieces never depend on the thread count (callers partition by shape only), and each piece
// is computed the same whichever thread runs it, so results do not depend on it either.
// Thread-safety: RunPieces may be called from any thread; one call uses the workers at a time
// and a concurrent call (serve replicas) runs its pieces inline. SetIntraOpThreads
// (core/cpu/gemm.hpp) resizes the pool; it waits for a running call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "core/cpu/gemm.hpp"

namespace shardflow::cpu {

// fn(i) for every i in [0, pieces), on the caller and the pool's workers.
void RunPieces(int64_t pieces, const std::function<void(int64_t)>& fn);
// Resizes the pool to `workers` helper threads (the intra-op threads less the caller).
void SetPoolWorkers(int workers);

// fn(begin, end) for disjoint ranges covering [0, n): up to 4 pieces per intra-op thread, none
// smaller than `grain` iterations (inline when that leaves one piece). For kernels whose every
// output is computed by one iteration, the same way whatever range it falls in.
template <typename Fn>
void ParallelFor(int64_t n, int64_t grain, const Fn& fn) {
  if (n <= 0) return;
  const int64_t pieces =
      std::min<int64_t>(n / std::max<int64_t>(grain, 1), int64_t{4} * IntraOpThreads());
  if (pieces <= 1) {
    fn(int64_t{0}, n);
    return;
  }
  RunPieces(pieces, [&](int64_t p) { fn(n * p / pieces, n * (p + 1) / pieces); });
}

}  // namespace shardflow::cpu
