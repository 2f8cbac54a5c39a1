// What the host-twin tests share (host_twin_test.cpp, host_twin_reductions_test.cpp): the
// backend under test (the host twin; in the GPU suite, built with SF_TEST_DEVICE_MIRROR, the
// CUDA backend behind host-memory mirrors), the tolerances, the fixture that skips there without
// a GPU, random inputs and the normalised error. host_twin_test.cpp says what the tests cover
// and what the tolerances mean.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/backend/host_twin.hpp"
#include "core/cpu/cpu_backend.hpp"
#include "core/random.hpp"
#if defined(SF_TEST_DEVICE_MIRROR)
#include "core/cuda/cudnn_ops.hpp"
#include "tests/cuda/device_mirror.hpp"
#endif

namespace shardflow::twin_testing {

inline constexpr double kFloatTol = 4e-6;  // a few float ulps of values of order 1

#if defined(SF_TEST_DEVICE_MIRROR)
template <typename T>
Backend<T>& UnderTest() {
  return cuda::testing::DeviceMirror<T>();
}
// The GPU's exp, tanh, log and cos are within an ulp or two of glibc's, not equal to them.
inline constexpr double kExact = kFloatTol;
#else
template <typename T>
Backend<T>& UnderTest() {
  return HostTwinBackend<T>();
}
inline constexpr double kExact = 0.0;  // same code, same order, same libm: bit for bit
#endif

class HostTwin : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(SF_TEST_DEVICE_MIRROR)
    std::string why;
    if (!cuda::testing::GpuAvailable(&why)) {
      GTEST_SKIP() << "no usable CUDA device (" << why << "); the GPU suite did not run";
    }
    // These tests check our index kernels: cuDNN's pooling, activations and batch norm are
    // tests/cuda/cudnn_ops_gpu_test.cpp's (and the training test that turns them on).
    cuda::SetCudnnOps(false);
#endif
  }
  void TearDown() override {
#if defined(SF_TEST_DEVICE_MIRROR)
    cuda::SetCudnnOps(true);
#endif
  }
};

template <typename T>
std::vector<T> Random(int64_t n, uint64_t stream, double lo = -1.0, double hi = 1.0) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<T>(lo + (hi - lo) * RandomUniform(77, stream, static_cast<uint64_t>(i)));
  }
  return v;
}

template <typename T>
double NormalisedError(const std::vector<T>& got, const std::vector<T>& want) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0.0, scale = 1.0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double g = got[i], w = want[i];
    if (std::isnan(g) != std::isnan(w)) return INFINITY;
    if (!std::isnan(w)) err = std::max(err, std::fabs(g - w));
    scale = std::max(scale, std::fabs(w));
  }
  return err / scale;
}

struct Both {
  Backend<float>& cpu = cpu::CpuBackend<float>();
  Backend<float>& twin = UnderTest<float>();
};

}  // namespace shardflow::twin_testing

#define EXPECT_TWIN(got, want, tol) \
  EXPECT_LE(::shardflow::twin_testing::NormalisedError(got, want), tol) << #got
