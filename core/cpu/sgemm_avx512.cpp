// shardflow's own single-precision GEMM kernel for AVX-512 (issue 25), chosen by core/cpu/gemm.cpp
// on x86-64-v4 CPUs for the float shapes where it beats Eigen's (core/cpu/gemm_isa.hpp).
//
// C is computed in tiles of R rows by V vectors of 16 columns (R * V <= 24 accumulators in
// zmm registers; 6 x 64, 8 x 48, 12 x 32 or 12 x 16). Each step over k loads V vectors of one
// row of op(B) and broadcasts R values of op(A) straight from memory, so A is never packed and
// may be as large as it likes (an im2col buffer of many images): each of its elements is read
// once per 64-column panel. op(B) is read in place when it is not transposed (a row of a panel
// is contiguous; the last vector of a narrow panel is a masked load); a transposed B is packed
// first by the caller into panels (core/cpu/gemm.cpp, which may instead compute the product
// transposed). Every element of C is one chain of fused
// multiply-adds over k = 0..K-1 from zero, then alpha * sum + beta * C: the same operations
// whatever tile, block or thread computes it, so results do not depend on the partition.
//
// Built with -march=x86-64-v4 (core/CMakeLists.txt); everything here but the two entry points
// has internal linkage, so no AVX-512 code can be shared with the x86-64-v3 program (CTest
// core.gemm_avx512_symbols).
#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

#include "core/cpu/gemm_isa.hpp"

namespace shardflow::cpu {
namespace {

// Rows of a full tile for V vectors per row: R * V accumulators, at most 24 of the 32 zmm
// registers, the rest for the V rows of B and the broadcast.
constexpr int RowsFor(int v) { return v == 4 ? 6 : (v == 3 ? 8 : 12); }

// Blocking: a panel's rows go in blocks of kRowBlock, and K in steps of kDepth, so the
// kDepth x 64 block of op(B) a row block reuses stays in L1/L2 (a dense layer's B is megabytes,
// and its rows are a page apart). Between steps a tile's sums wait in `scratch`, stored and
// reloaded exactly, so every element is still one chain over k = 0..K-1.
constexpr int64_t kRowBlock = 96, kDepth = 256;

struct TileArgs {
  int64_t k;          // this step's depth
  const float* a;     // op(A)(the tile's row 0, this step's k = 0)
  int64_t a_stride;   // lda: between rows (not transposed) or between k steps (transposed)
  const float* b;     // op(B)(this step's k = 0, the tile's first column)
  int64_t b_step;     // between k steps of op(B)
  __mmask16 last;     // the columns of the last vector that exist
  const float* from;  // the sums so far (row stride kSgemmPanel), or null: start at zero
  float* to;          // where to leave the sums, or null: this is the last step, write C
  float alpha, beta;
  float* c;
  int64_t ldc;
};

template <bool kTransA, int R, int V>
void Tile(const TileArgs& t) {
  const __mmask16 last = t.last;
  __m512 acc[R][V];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      acc[r][v] = t.from == nullptr ? _mm512_setzero_ps()
                                    : _mm512_loadu_ps(t.from + r * kSgemmPanel + 16 * v);
    }
  }
  const float* rows[R];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) rows[r] = kTransA ? t.a + r : t.a + r * t.a_stride;
  const float* b = t.b;
  const int64_t k = t.k, b_step = t.b_step, a_stride = t.a_stride;
  for (int64_t kk = 0; kk < k; ++kk, b += b_step) {
    __m512 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v + 1 < V; ++v) bv[v] = _mm512_loadu_ps(b + 16 * v);
    bv[V - 1] = _mm512_maskz_loadu_ps(last, b + 16 * (V - 1));
    const int64_t at = kTransA ? kk * a_stride : kk;
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(rows[r][at]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  if (t.to != nullptr) {
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) _mm512_storeu_ps(t.to + r * kSgemmPanel + 16 * v, acc[r][v]);
    }
    return;
  }
  const __m512 alpha = _mm512_set1_ps(t.alpha), beta = _mm512_set1_ps(t.beta);
  const bool add = t.beta != 0.0f;  // beta = 0 never reads C (it may hold NaN)
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r) {
    float* c = t.c + r * t.ldc;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const __mmask16 m = v + 1 < V ? __mmask16(0xFFFF) : last;
      __m512 out = _mm512_mul_ps(alpha, acc[r][v]);
      if (add) out = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m, c + 16 * v), out);
      _mm512_mask_storeu_ps(c + 16 * v, m, out);
    }
  }
}

// A tile of `rows` (< RowsFor(V)) rows: the instance for exactly that many.
template <bool kTransA, int V, int R>
void PartialTile(int rows, const TileArgs& t) {
  if constexpr (R > 0) {
    if (rows == R) {
      Tile<kTransA, R, V>(t);
    } else {
      PartialTile<kTransA, V, R - 1>(rows, t);
    }
  }
}

// Rows [r0, r1) of one panel of V vectors; t describes k = 0 of the panel's row 0.
template <bool kTransA, int V>
void PanelRows(int64_t r0, int64_t r1, const TileArgs& t, int64_t depth) {
  constexpr int kRows = RowsFor(V);
  alignas(64) float scratch[kRowBlock * kSgemmPanel];
  for (int64_t i0 = r0; i0 < r1; i0 += kRowBlock) {
    const int64_t i1 = i0 + kRowBlock < r1 ? i0 + kRowBlock : r1;
    for (int64_t k0 = 0; k0 < depth; k0 += kDepth) {
      TileArgs u = t;
      u.k = depth - k0 < kDepth ? depth - k0 : kDepth;
      u.b = t.b + k0 * t.b_step;
      const bool first = k0 == 0, final = k0 + u.k == depth;
      for (int64_t i = i0; i < i1; i += kRows) {
        u.a = kTransA ? t.a + k0 * t.a_stride + i : t.a + i * t.a_stride + k0;
        u.c = t.c + i * t.ldc;
        u.from = first ? nullptr : scratch + (i - i0) * kSgemmPanel;
        u.to = final ? nullptr : scratch + (i - i0) * kSgemmPanel;
        if (i + kRows <= i1) {
          Tile<kTransA, kRows, V>(u);
        } else {
          PartialTile<kTransA, V, kRows - 1>(static_cast<int>(i1 - i), u);
        }
      }
    }
  }
}

template <bool kTransA>
void Rows(const SgemmAvx512Args& g, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
    const int64_t j0 = p * kSgemmPanel;
    const int64_t width = g.n - j0 < kSgemmPanel ? g.n - j0 : kSgemmPanel;
    const int v = static_cast<int>((width + 15) / 16);
    const int tail = static_cast<int>(width % 16);
    TileArgs t{};
    t.a = g.a;
    t.a_stride = g.lda;
    if (g.packed_b != nullptr) {  // panel p: K rows of v * 16 floats, after p full panels
      t.b = g.packed_b + p * kSgemmPanel * g.k;
      t.b_step = 16 * v;
    } else {
      t.b = g.b + j0;
      t.b_step = g.ldb;
    }
    t.last = tail == 0 ? __mmask16(0xFFFF) : __mmask16((1u << tail) - 1);
    t.alpha = g.alpha;
    t.beta = g.beta;
    t.c = g.c + j0;
    t.ldc = g.ldc;
    switch (v) {
      case 1:
        PanelRows<kTransA, 1>(r0, r1, t, g.k);
        break;
      case 2:
        PanelRows<kTransA, 2>(r0, r1, t, g.k);
        break;
      case 3:
        PanelRows<kTransA, 3>(r0, r1, t, g.k);
        break;
      default:
        PanelRows<kTransA, 4>(r0, r1, t, g.k);
        break;
    }
  }
}

}  // namespace

void SgemmAvx512(const SgemmAvx512Args& g, int64_t r0, int64_t r1, int64_t p0, int64_t p1) {
  if (g.trans_a) {
    Rows<true>(g, r0, r1, p0, p1);
  } else {
    Rows<false>(g, r0, r1, p0, p1);
  }
}

}  // namespace shardflow::cpu

#endif  // defined(__x86_64__)
