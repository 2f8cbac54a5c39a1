// Index kernels of the fused optimizer updates and the LSTM cell, shared by the CUDA backend and
// its host twin (see kernels/elementwise.hpp). The per-element math is core/backend/pointwise.hpp,
// the same functions the CPU loops call.
#pragma once

#include <cstdint>

#include "core/backend/backend.hpp"
#include "core/backend/host_device.hpp"
#include "core/backend/pointwise.hpp"

namespace shardflow::kernels {

// SGD (plain, momentum or Nesterov) on one parameter. Index: element.
template <typename T>
struct SgdK {
  T lr, mu, wd;
  bool nesterov;
  T* w;
  const T* g;
  T* v;
  SF_HOST_DEVICE void operator()(int64_t i) const {
    if (mu == T(0)) {
      pointwise::SgdPlain(w[i], g[i], lr, wd);
    } else if (nesterov) {
      pointwise::SgdNesterov(w[i], g[i], v[i], lr, mu, wd);
    } else {
      pointwise::SgdMomentum(w[i], g[i], v[i], lr, mu, wd);
    }
  }
};

// Adam on one parameter. Index: element.
template <typename T>
struct AdamK {
  pointwise::AdamConstants<T> c;
  T* w;
  const T* g;
  T* m;
  T* v;
  SF_HOST_DEVICE void operator()(int64_t i) const { pointwise::Adam(w[i], g[i], m[i], v[i], c); }
};

// One LSTM time step: z row n holds [i f g o] (4H, row stride ldz), turned into the gates in
// place; c and hs (row stride ldc) get the cell and output; the previous cell is at c - H.
// Index: (row, unit) = n * H + j.
template <typename T>
struct LstmCellK {
  int64_t h, ldz, ldc;
  bool has_prev;
  T* z;
  T* c;
  T* hs;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t n = idx / h, j = idx % h;
    T* zr = z + n * ldz;
    T* cr = c + n * ldc;
    const T cprev = has_prev ? cr[j - h] : cr[j];
    pointwise::LstmCell(zr[j], zr[h + j], zr[2 * h + j], zr[3 * h + j], cprev, has_prev, cr[j],
                        hs[n * ldc + j]);
  }
};

// Its adjoint: dz from the saved gates and cells, dh (B, H); dc (B, H) in: the step t+1 cell
// gradient, out: the one for t-1. Index: (row, unit).
template <typename T>
struct LstmCellGradK {
  int64_t h, ldz, ldc;
  bool has_prev;
  const T* z;
  const T* c;
  const T* dh;
  T* dc;
  T* dz;
  SF_HOST_DEVICE void operator()(int64_t idx) const {
    const int64_t n = idx / h, j = idx % h;
    const T* zr = z + n * ldz;
    T* dzr = dz + n * ldz;
    const T* cr = c + n * ldc;
    const T cprev = has_prev ? cr[j - h] : T(0);
    dc[idx] = pointwise::LstmCellGrad(zr[j], zr[h + j], zr[2 * h + j], zr[3 * h + j], cr[j], cprev,
                                      dh[idx], dc[idx], dzr[j], dzr[h + j], dzr[2 * h + j],
                                      dzr[3 * h + j]);
  }
};

}  // namespace shardflow::kernels
