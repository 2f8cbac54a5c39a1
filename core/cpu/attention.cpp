#include "core/cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/cpu/gemm.hpp"
#include "core/cpu/parallel.hpp"
#include "core/cpu/vector_math.hpp"

namespace shardflow::cpu {
namespace {

// One (batch, head) pair's views into the shared buffers.
template <typename T>
struct HeadView {
  const T* q;  // row t at q + t * ld; k = q + dh, v = q + 2 dh
  int64_t ld;
  int64_t od;  // row stride of o and dout (H * dh)
  int64_t dh;
  int64_t time;
  int64_t keys;  // the keys before the padding (time when nothing is padded)
  bool causal;
  T scale;
};

template <typename T>
HeadView<T> ViewOf(const AttentionShape& s, const T* qkv, int64_t pair) {
  const int64_t b = pair / s.heads, h = pair % s.heads;
  return {.q = qkv + b * s.time * s.ld_qkv + h * 3 * s.head_dim,
          .ld = s.ld_qkv,
          .od = s.heads * s.head_dim,
          .dh = s.head_dim,
          .time = s.time,
          .keys = s.lengths != nullptr ? std::clamp<int64_t>(s.lengths[b], 1, s.time) : s.time,
          .causal = s.causal,
          .scale = T(1) / std::sqrt(T(s.head_dim))};
}

// v[i] = exp(v[i]), vectorised for float.
template <typename T>
void ExpInPlace(int64_t n, T* v) {
  if constexpr (std::is_same_v<T, float>) {
    ExpFloat(n, v, v);
  } else {
    for (int64_t i = 0; i < n; ++i) v[i] = std::exp(v[i]);
  }
}

// Keys of tile [j0, j0 + bk) that query i sees: those before the padding (`keys`), and under
// the causal mask only those <= i.
inline int64_t Visible(bool causal, int64_t keys, int64_t i, int64_t j0, int64_t bk) {
  const int64_t seen = std::clamp<int64_t>(keys - j0, 0, bk);
  return causal ? std::min(seen, std::clamp<int64_t>(i - j0 + 1, 0, bk)) : seen;
}

// Folds one tile of scores (bq x bk, row-major in s) into the running max m, sum l and output
// rows o (bq x dh, row stride od): s becomes the tile's unnormalised probabilities.
template <typename T>
void FoldTile(const HeadView<T>& v, int64_t i0, int64_t j0, int64_t bq, int64_t bk, T* s, T* m,
              T* l, T* o) {
  for (int64_t r = 0; r < bq; ++r) {
    T* row = s + r * bk;
    const int64_t seen = Visible(v.causal, v.keys, i0 + r, j0, bk);
    T mx = m[r];
    for (int64_t c = 0; c < seen; ++c) mx = std::max(mx, row[c]);
    const T alpha = seen == 0 || m[r] == mx ? T(1) : std::exp(m[r] - mx);
    for (int64_t c = 0; c < seen; ++c) row[c] -= mx;
    ExpInPlace(seen, row);
    T sum = 0;
    for (int64_t c = 0; c < seen; ++c) sum += row[c];
    std::fill(row + seen, row + bk, T(0));
    l[r] = l[r] * alpha + sum;
    m[r] = mx;
    if (alpha != T(1)) {
      T* orow = o + r * v.od;
      for (int64_t c = 0; c < v.dh; ++c) orow[c] *= alpha;
    }
  }
}

// Query rows [i0, i0 + bq) of one (batch, head): o rows and their log-sum-exp.
template <typename T>
void ForwardRows(const HeadView<T>& v, int64_t i0, int64_t bq, T* o, T* lse, std::vector<T>& s) {
  const T* k = v.q + v.dh;
  const T* val = v.q + 2 * v.dh;
  T m[kAttentionTile], l[kAttentionTile];
  std::fill(m, m + bq, -std::numeric_limits<T>::infinity());
  std::fill(l, l + bq, T(0));
  for (int64_t r = 0; r < bq; ++r) std::fill(o + r * v.od, o + r * v.od + v.dh, T(0));
  const int64_t end = v.causal ? std::min(i0 + bq, v.keys) : v.keys;
  for (int64_t j0 = 0; j0 < end; j0 += kAttentionTile) {
    const int64_t bk = std::min(kAttentionTile, end - j0);
    GemmSerial(false, true, bq, bk, v.dh, v.scale, v.q + i0 * v.ld, v.ld, k + j0 * v.ld, v.ld, T(0),
               s.data(), bk);
    FoldTile(v, i0, j0, bq, bk, s.data(), m, l, o);
    GemmSerial(false, false, bq, v.dh, bk, T(1), s.data(), bk, val + j0 * v.ld, v.ld, T(1), o,
               v.od);
  }
  for (int64_t r = 0; r < bq; ++r) {
    T* orow = o + r * v.od;
    const T inv = T(1) / l[r];
    for (int64_t c = 0; c < v.dh; ++c) orow[c] *= inv;
    lse[r] = m[r] + std::log(l[r]);
  }
}

// The tile's probabilities p = exp(score - lse) (0 where masked) and, in ds, p * (dp - delta)
// with dp = dout v^T already in ds.
template <typename T>
void TileGradient(const HeadView<T>& v, int64_t i0, int64_t j0, int64_t bq, int64_t bk,
                  const T* lse, const T* delta, T* p, T* ds) {
  for (int64_t r = 0; r < bq; ++r) {
    const int64_t seen = Visible(v.causal, v.keys, i0 + r, j0, bk);
    T* prow = p + r * bk;
    T* drow = ds + r * bk;
    for (int64_t c = 0; c < seen; ++c) prow[c] -= lse[r];
    ExpInPlace(seen, prow);
    for (int64_t c = 0; c < seen; ++c) drow[c] = prow[c] * (drow[c] - delta[r]);
    std::fill(prow + seen, prow + bk, T(0));
    std::fill(drow + seen, drow + bk, T(0));
  }
}

// One (batch, head): dq, dk, dv (columns of dqkv) from dout, key tile by key tile.
template <typename T>
void BackwardPair(const HeadView<T>& v, const T* o, const T* lse, const T* dout, T* dq) {
  const T* k = v.q + v.dh;
  const T* val = v.q + 2 * v.dh;
  T* dk = dq + v.dh;
  T* dv = dq + 2 * v.dh;
  std::vector<T> delta(static_cast<size_t>(v.time));
  for (int64_t t = 0; t < v.time; ++t) {
    T sum = 0;
    for (int64_t c = 0; c < v.dh; ++c) sum += dout[t * v.od + c] * o[t * v.od + c];
    delta[static_cast<size_t>(t)] = sum;
    std::fill(dq + t * v.ld, dq + t * v.ld + 3 * v.dh, T(0));
  }
  std::vector<T> p(kAttentionTile * kAttentionTile), ds(p.size());
  for (int64_t j0 = 0; j0 < v.keys; j0 += kAttentionTile) {
    const int64_t bk = std::min(kAttentionTile, v.keys - j0);
    for (int64_t i0 = v.causal ? j0 : 0; i0 < v.time; i0 += kAttentionTile) {
      const int64_t bq = std::min(kAttentionTile, v.time - i0);
      const T* qi = v.q + i0 * v.ld;
      const T* doi = dout + i0 * v.od;
      GemmSerial(false, true, bq, bk, v.dh, v.scale, qi, v.ld, k + j0 * v.ld, v.ld, T(0), p.data(),
                 bk);
      GemmSerial(false, true, bq, bk, v.dh, T(1), doi, v.od, val + j0 * v.ld, v.ld, T(0), ds.data(),
                 bk);
      TileGradient(v, i0, j0, bq, bk, lse + i0, delta.data() + i0, p.data(), ds.data());
      GemmSerial(true, false, bk, v.dh, bq, T(1), p.data(), bk, doi, v.od, T(1), dv + j0 * v.ld,
                 v.ld);
      GemmSerial(false, false, bq, v.dh, bk, v.scale, ds.data(), bk, k + j0 * v.ld, v.ld, T(1),
                 dq + i0 * v.ld, v.ld);
      GemmSerial(true, false, bk, v.dh, bq, v.scale, ds.data(), bk, qi, v.ld, T(1), dk + j0 * v.ld,
                 v.ld);
    }
  }
}

}  // namespace

template <typename T>
void AttentionForward(const AttentionShape& s, const T* qkv, T* o, T* lse) {
  const int64_t pairs = s.batch * s.heads;
  ParallelFor(pairs, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> scratch(kAttentionTile * kAttentionTile);
    for (int64_t pair = begin; pair < end; ++pair) {
      const HeadView<T> v = ViewOf(s, qkv, pair);
      const int64_t b = pair / s.heads, h = pair % s.heads;
      T* ob = o + b * s.time * v.od + h * s.head_dim;
      T* lb = lse + pair * s.time;
      for (int64_t i0 = 0; i0 < s.time; i0 += kAttentionTile) {
        const int64_t bq = std::min(kAttentionTile, s.time - i0);
        ForwardRows(v, i0, bq, ob + i0 * v.od, lb + i0, scratch);
      }
    }
  });
}

template <typename T>
void AttentionBackward(const AttentionShape& s, const T* qkv, const T* o, const T* lse,
                       const T* dout, T* dqkv) {
  const int64_t pairs = s.batch * s.heads, od = s.heads * s.head_dim;
  ParallelFor(pairs, 1, [&](int64_t begin, int64_t end) {
    for (int64_t pair = begin; pair < end; ++pair) {
      const HeadView<T> v = ViewOf(s, qkv, pair);
      const int64_t b = pair / s.heads, h = pair % s.heads;
      const int64_t orow = b * s.time * od + h * s.head_dim;
      BackwardPair(v, o + orow, lse + pair * s.time, dout + orow, dqkv + (v.q - qkv));
    }
  });
}

template void AttentionForward<float>(const AttentionShape&, const float*, float*, float*);
template void AttentionForward<double>(const AttentionShape&, const double*, double*, double*);
template void AttentionBackward<float>(const AttentionShape&, const float*, const float*,
                                       const float*, const float*, float*);
template void AttentionBackward<double>(const AttentionShape&, const double*, const double*,
                                        const double*, const double*, double*);

}  // namespace shardflow::cpu
