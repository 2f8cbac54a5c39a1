// bf16 mixed precision, as Keras' mixed_bfloat16 and PyTorch's autocast define it: the inputs
// of matrix products (dense layers, convolutions as im2col + GEMM, LSTM gates) are rounded to
// bf16 and their products summed in float; everything else (activations, batch norm, softmax,
// losses, optimizer updates, the stored tensors and the master weights) stays float.
// On the CPU the products run on oneDNN's bf16 matmul (core/precision/bf16/cpu_bf16_gemm.hpp);
// a CPU without AVX512-BF16 or AMX-BF16 cannot run it (no slow emulation). Other devices cannot
// yet (the CUDA backend's cuBLAS bf16 path is issue 48's open part).
#pragma once

#include "core/precision/precision.hpp"

namespace shardflow::bf16 {

PrecisionSpec Bf16Precision();

}  // namespace shardflow::bf16
