// One float conv layer's forward and backward passes on seeded data, for the tests that compare
// convolution paths through the layer (onednn_conv_test.cpp, winograd_test.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/arena.hpp"
#include "core/layers/conv2d.hpp"
#include "core/random.hpp"

namespace shardflow::testing {

struct ConvPass {
  std::vector<float> y, dx, grads;
};

struct ConvCase {
  Shape in;
  Conv2DOptions o;
};

// Forward and backward of a float conv layer over `batch` seeded samples; `backwards` backward
// passes into the same gradients (they add up).
inline ConvPass RunConvPass(const ConvCase& c, int64_t batch, int backwards = 1) {
  std::unique_ptr<Layer<float>> layer = MakeConv2D<float>(c.o);
  Arena<float> arena;
  BuildContext<float> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_conv"};
  const Shape out = layer->Build(c.in, ctx);
  arena.Allocate();
  for (int64_t i = 0; i < arena.size(); ++i) {
    arena.params()[i] = static_cast<float>(RandomNormal(3, 0, i));
  }
  arena.ZeroGrads();
  Tensor x(DType::kFloat32, WithBatch(batch, c.in));
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = static_cast<float>(RandomNormal(4, 0, i));
  }
  const Tensor y = layer->Forward(x, {.training = true});
  Tensor dy(DType::kFloat32, WithBatch(batch, out));
  for (int64_t i = 0; i < dy.num_elements(); ++i) {
    dy.data<float>()[i] = static_cast<float>(RandomNormal(5, 0, i));
  }
  Tensor dx;
  for (int i = 0; i < backwards; ++i) dx = layer->Backward(dy, true);
  ConvPass p;
  p.y.assign(y.data<float>(), y.data<float>() + y.num_elements());
  p.dx.assign(dx.data<float>(), dx.data<float>() + dx.num_elements());
  p.grads.assign(arena.grads(), arena.grads() + arena.size());
  return p;
}

}  // namespace shardflow::testing
