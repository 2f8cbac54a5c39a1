// shardflow's own single-precision GEMM kernel (issue 25; docs/design.md decision 52), written
// once over an instruction-set description I and compiled per target: core/cpu/sgemm_avx512.cpp
// (x86-64-v4, 16-float zmm vectors, 64-column panels) and core/cpu/sgemm_avx2.cpp (x86-64-v3,
// 8-float ymm vectors, 24-column panels). Included by those two files only; everything here is
// in an unnamed namespace, so each file's instances are its own and no AVX-512 code can be
// shared with the x86-64-v3 program (CTest core.gemm_avx512_symbols).
//
// C is computed in tiles of R rows by V vectors (R * V accumulators in registers, I::RowsFor).
// Each step over k loads V vectors of one row of op(B) and broadcasts R values of op(A) straight
// from memory, so A is never packed and may be as large as it likes (an im2col buffer of many
// images): each of its elements is read once per panel. op(B) is read in place when it is not
// transposed (a row of a panel is contiguous; the last vector of a narrow panel is a masked
// load); a transposed B is packed first by the caller into panels (core/cpu/gemm.cpp, which may
// instead compute the product transposed). Every element of C is one chain of fused
// multiply-adds over k = 0..K-1 from zero, then alpha * sum + beta * C: the same operations
// whatever tile, block, thread or target computes it, so results do not depend on the partition.
//
// An instruction-set description I provides: Vec, Mask, kLanes (floats per vector), kPanel
// (columns per panel: 3 or 4 vectors), RowsFor(v), and Zero, Load, MaskLoad, Set1, Fma, Mul,
// Store, MaskStore, Full, TailMask(tail) (the first `tail` lanes; all for 0).
#pragma once

#include <cstdint>

#include "core/cpu/gemm_isa.hpp"

namespace shardflow::cpu {
namespace {  // NOLINT: one instance per including translation unit, on purpose

// Blocking: a panel's rows go in blocks of kRowBlock, and K in steps of kDepth, so the
// kDepth x panel block of op(B) a row block reuses stays in L1/L2 (a dense layer's B is megabytes,
// and its rows are a page apart). Between steps a tile's sums wait in `scratch`, stored and
// reloaded exactly, so every element is still one chain over k = 0..K-1.
constexpr int64_t kRowBlock = 96, kDepth = 256;  // kRowBlock: a multiple of every tile's rows

template <class I>
struct TileArgs {
  using Mask = typename I::Mask;
  int64_t k;          // this step's depth
  const float* a;     // op(A)(the tile's row 0, this step's k = 0)
  int64_t a_stride;   // lda: between rows (not transposed) or between k steps (transposed)
  const float* b;     // op(B)(this step's k = 0, the tile's first column)
  int64_t b_step;     // between k steps of op(B)
  Mask last;          // the columns of the last vector that exist
  const float* from;  // the sums so far (row stride I::kPanel), or null: start at zero
  float* to;          // where to leave the sums, or null: this is the last step, write C
  float alpha, beta;
  float* c;
  int64_t ldc;
};

template <class I, bool kTransA, int R, int V>
void Tile(const TileArgs<I>& t) {
  using Vec = typename I::Vec;
  const auto last = t.last;
  Vec acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      acc[r][v] = t.from == nullptr ? I::Zero() : I::Load(t.from + r * I::kPanel + I::kLanes * v);
    }
  }
  const float* rows[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) rows[r] = kTransA ? t.a + r : t.a + r * t.a_stride;
  const int64_t k = t.k, b_step = t.b_step, a_stride = t.a_stride;
  for (int64_t kk = 0; kk < k; ++kk) {
    const float* b = t.b + kk * b_step;  // never a pointer past B's end
    Vec bv[V];
#pragma GCC unroll 4
    for (int v = 0; v + 1 < V; ++v) bv[v] = I::Load(b + I::kLanes * v);
    bv[V - 1] = I::MaskLoad(last, b + I::kLanes * (V - 1));
    const int64_t at = kTransA ? kk * a_stride : kk;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const Vec av = I::Set1(rows[r][at]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = I::Fma(av, bv[v], acc[r][v]);
    }
  }
  if (t.to != nullptr) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) I::Store(t.to + r * I::kPanel + I::kLanes * v, acc[r][v]);
    }
    return;
  }
  const Vec alpha = I::Set1(t.alpha), beta = I::Set1(t.beta);
  const bool add = t.beta != 0.0f;  // beta = 0 never reads C (it may hold NaN)
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* c = t.c + r * t.ldc;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const auto m = v + 1 < V ? I::Full() : last;
      Vec out = I::Mul(alpha, acc[r][v]);
      if (add) out = I::Fma(beta, I::MaskLoad(m, c + I::kLanes * v), out);
      I::MaskStore(c + I::kLanes * v, m, out);
    }
  }
}

// A tile of `rows` (< RowsFor(V)) rows: the instance for exactly that many.
template <class I, bool kTransA, int V, int R>
void PartialTile(int rows, const TileArgs<I>& t) {
  if constexpr (R > 0) {
    if (rows == R) {
      Tile<I, kTransA, R, V>(t);
    } else {
      PartialTile<I, kTransA, V, R - 1>(rows, t);
    }
  }
}

// Rows [r0, r1) of one panel of V vectors; t describes k = 0 of the panel's row 0.
template <class I, bool kTransA, int V>
void PanelRows(int64_t r0, int64_t r1, const TileArgs<I>& t, int64_t depth) {
  constexpr int kRows = I::RowsFor(V);
  alignas(64) float scratch[kRowBlock * I::kPanel];
  for (int64_t i0 = r0; i0 < r1; i0 += kRowBlock) {
    const int64_t i1 = i0 + kRowBlock < r1 ? i0 + kRowBlock : r1;
    for (int64_t k0 = 0; k0 < depth; k0 += kDepth) {
      TileArgs<I> u = t;
      u.k = depth - k0 < kDepth ? depth - k0 : kDepth;
      u.b = t.b + k0 * t.b_step;
      const bool first = k0 == 0, final = k0 + u.k == depth;
      for (int64_t i = i0; i < i1; i += kRows) {
        u.a = kTransA ? t.a + k0 * t.a_stride + i : t.a + i * t.a_stride + k0;
        u.c = t.c + i * t.ldc;
        u.from = first ? nullptr : scratch + (i - i0) * I::kPanel;
        u.to = final ? nullptr : scratch + (i - i0) * I::kPanel;
        if (i + kRows <= i1) {
          Tile<I, kTransA, kRows, V>(u);
        } else {
          PartialTile<I, kTransA, V, kRows - 1>(static_cast<int>(i1 - i), u);
        }
      }
    }
  }
}

template <class I, bool kTransA>
void Rows(const SgemmArgs& g, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j0 = p * I::kPanel;
    const int64_t width = g.n - j0 < I::kPanel ? g.n - j0 : I::kPanel;
    const int v = static_cast<int>((width + I::kLanes - 1) / I::kLanes);
    TileArgs<I> t{};
    t.a = g.a;
    t.a_stride = g.lda;
    if (g.packed_b != nullptr) {  // panel p: K rows of v whole vectors, after p full panels
      t.b = g.packed_b + p * I::kPanel * g.k;
      t.b_step = I::kLanes * v;
    } else {
      t.b = g.b + j0;
      t.b_step = g.ldb;
    }
    t.last = I::TailMask(static_cast<int>(width % I::kLanes));
    t.alpha = g.alpha;
    t.beta = g.beta;
    t.c = g.c + j0;
    t.ldc = g.ldc;
    static_assert(I::kPanel / I::kLanes >= 3 && I::kPanel / I::kLanes <= 4);
    switch (v) {
      case 1:
        PanelRows<I, kTransA, 1>(r0, r1, t, g.k);
        break;
      case 2:
        PanelRows<I, kTransA, 2>(r0, r1, t, g.k);
        break;
      case 3:
        PanelRows<I, kTransA, 3>(r0, r1, t, g.k);
        break;
      default:
        if constexpr (I::kPanel / I::kLanes == 4) PanelRows<I, kTransA, 4>(r0, r1, t, g.k);
        break;
    }
  }
}

// Rows [r0, r1) and panels [p0, p1) of C = alpha op(A) op(B) + beta C.
template <class I>
void SgemmRows(const SgemmArgs& g, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
  if (g.trans_a) {
    Rows<I, true>(g, r0, r1, p0, p1);
  } else {
    Rows<I, false>(g, r0, r1, p0, p1);
  }
}

}  // namespace
}  // namespace shardflow::cpu
