// bf16 numbers as the CPU kernels store them: the upper 16 bits of a float (8 significant bits),
// rounded to nearest even, as oneDNN and PyTorch round. Used by the bf16 products
// (core/precision/bf16/cpu_bf16_gemm.hpp) and the bf16 convolutions (core/cpu/onednn_conv.hpp).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

namespace shardflow::bf16 {

// float -> bf16 bits, rounding to nearest even; a NaN stays a NaN (quiet), infinities stay.
uint16_t FromFloat(float x);
float ToFloat(uint16_t bits);
// The (rows, cols) matrix x with row stride ld, rounded into out packed (row stride cols).
void RoundRows(const float* x, int64_t rows, int64_t cols, int64_t ld, uint16_t* out);

}  // namespace shardflow::bf16
