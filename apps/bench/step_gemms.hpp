// The GEMMs of one training step of a model, as the layers call cpu::Gemm: shared by
// `shardflow-bench step` (the compute limit) and `shardflow-bench gemm` (kernel per shape).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/bench/library_gemm.hpp"
#include "core/cpu/im2col.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/model.hpp"

namespace shardflow::bench {

struct GemmShape {
  bool ta, tb;
  int64_t m, n, k;
  int64_t count = 1;  // calls of this shape per step (a convolution runs per im2col chunk)
  const char* what;   // "fwd", "dW" or "dx"
  int layer;
  int conv = -1;  // index in StepConvs() of the convolution it belongs to; -1: a dense layer
};

// A convolution of the step (a conv layer, or one inside a residual block), "same" padding.
struct ConvShape {
  int layer;
  std::string name;  // the kernel parameter's name, e.g. "conv1/kernel"
  ConvGeometry g;
  int64_t filters;
  bool need_dx;  // past the first trainable layer
};
std::vector<ConvShape> StepConvs(Sequential<float>& m);

// Seconds of each pass of one convolution on `batch` images through oneDNN (forced; core/cpu/
// onednn_conv.hpp), medians of `reps`; a pass oneDNN cannot run, or need_dx false for dx, is
// +infinity. All +infinity in a build without oneDNN. `data`: float, or bf16 (the bf16 precision's
// convolutions, inputs rounded in the call).
struct ConvPassTimes {
  double fwd, dw, dx;
};
ConvPassTimes TimeLibraryConv(const ConvShape& c, int64_t batch, int reps,
                              cpu::ConvData data = cpu::ConvData::kFloat);

// The first layer with parameters; layers up to it need no input gradient (as in Sequential).
int FirstTrainable(const Sequential<float>& m);

// From the kernels in the arena: a rank-4 kernel (KH, KW, C, F) is a convolution, run per chunk
// of images whose im2col rows fit the default budget (core/layers/conv2d.hpp), each chunk a GEMM
// with M = chunk*OH*OW, K = KH*KW*C, N = F (its input gradient reads W^T in place); a rank-2 kernel
// (F, U) a dense layer with M = B * rows, K = F, N = U. Forward, weight gradient and (past the
// first trainable layer) input gradient of each.
std::vector<GemmShape> StepGemms(Sequential<float>& m, int64_t batch);

// Operands of one shape: A and B filled with short-period patterns, and C.
struct GemmBuffers {
  std::vector<float> a, b, c;
};
GemmBuffers BuffersFor(const GemmShape& g);
// Seconds for g.count calls of the shape, as the layers make them; a few elements of C are
// checked against a double-precision reference (an error if they differ).
double TimeShape(const GemmShape& g, GemmBuffers& buf);
// The same through a library GEMM on cpu::IntraOpThreads() threads; +infinity when the build
// lacks the library.
double TimeLibraryShape(GemmLibrary lib, const GemmShape& g, GemmBuffers& buf);

}  // namespace shardflow::bench
