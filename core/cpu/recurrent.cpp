// LSTM cell CPU kernels: one time step over a batch, forward and adjoint. The GEMMs of the
// recurrence stay in the layer (core/layers/lstm.cpp); these are the per-unit gate math.
#include "core/backend/pointwise.hpp"
#include "core/cpu/kernels.hpp"

namespace shardflow::cpu {

// Row n: z + n ldz holds [i f g o] (4H), c + n ldc and hs + n ldc the step's cell and output.
template <typename T>
void LstmCell(int64_t batch, int64_t h, T* z, int64_t ldz, T* c, T* hs, int64_t ldc,
              bool has_prev) {
  for (int64_t n = 0; n < batch; ++n) {
    T* zr = z + n * ldz;
    T* cr = c + n * ldc;
    T* hr = hs + n * ldc;
    const T* cprev = has_prev ? cr - h : cr;
    for (int64_t j = 0; j < h; ++j) {
      pointwise::LstmCell(zr[j], zr[h + j], zr[2 * h + j], zr[3 * h + j], cprev[j], has_prev, cr[j],
                          hr[j]);
    }
  }
}

// dh, dc (B, H); dz row n at dz + n ldz.
template <typename T>
void LstmCellGrad(int64_t batch, int64_t h, const T* z, int64_t ldz, const T* c, int64_t ldc,
                  bool has_prev, const T* dh, T* dc, T* dz) {
  for (int64_t n = 0; n < batch; ++n) {
    const T* zr = z + n * ldz;
    T* dzr = dz + n * ldz;
    const T* cr = c + n * ldc;
    for (int64_t j = 0; j < h; ++j) {
      const T cprev = has_prev ? cr[j - h] : T(0);
      dc[n * h + j] = pointwise::LstmCellGrad(zr[j], zr[h + j], zr[2 * h + j], zr[3 * h + j], cr[j],
                                              cprev, dh[n * h + j], dc[n * h + j], dzr[j],
                                              dzr[h + j], dzr[2 * h + j], dzr[3 * h + j]);
    }
  }
}

template void LstmCell<float>(int64_t, int64_t, float*, int64_t, float*, float*, int64_t, bool);
template void LstmCell<double>(int64_t, int64_t, double*, int64_t, double*, double*, int64_t, bool);
template void LstmCellGrad<float>(int64_t, int64_t, const float*, int64_t, const float*, int64_t,
                                  bool, const float*, float*, float*);
template void LstmCellGrad<double>(int64_t, int64_t, const double*, int64_t, const double*, int64_t,
                                   bool, const double*, double*, double*);

}  // namespace shardflow::cpu
