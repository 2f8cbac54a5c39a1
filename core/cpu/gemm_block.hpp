// One block of a GEMM through Eigen's packed kernels, compiled once per instruction-set target:
// core/cpu/gemm.cpp includes it for x86-64-v3 (namespace v3) and core/cpu/gemm_avx512.cpp for
// x86-64-v4 (namespace v4, with Eigen renamed; see there). The includer defines
// SHARDFLOW_GEMM_ISA (the namespace) and includes <Eigen/Core> first. Not a public header.
#pragma once

#include <cstdint>

namespace shardflow::cpu::SHARDFLOW_GEMM_ISA {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMap = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using MutMap = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

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

}  // namespace shardflow::cpu::SHARDFLOW_GEMM_ISA
