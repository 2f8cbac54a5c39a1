// What the GPU tests of cuDNN's paths share (cudnn_conv_gpu_test.cpp, cudnn_ops_gpu_test.cpp):
// the fixture that skips without a GPU, and the comparison of a float or double GPU result with
// a double reference as a normalised error.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tests/cuda/device_mirror.hpp"

namespace shardflow::cuda::testing {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!GpuAvailable(&why)) {
      GTEST_SKIP() << "no usable CUDA device (" << why << "); the GPU suite did not run";
    }
  }
};

template <typename T>
std::vector<T> As(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

// max |got - want| / max(1, max |want|).
template <typename T>
double ReferenceError(const std::vector<T>& got, const std::vector<double>& want) {
  double err = 0.0, scale = 1.0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(got[i]) - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / scale;
}

}  // namespace shardflow::cuda::testing
