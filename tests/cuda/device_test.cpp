// GPU-only checks of the device layer under the backend: a self-test kernel, scratch memory from
// the stream-ordered pool, and the peak the pool reports. Skipped (with the reason) without a GPU.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cuda/cuda_backend.hpp"
#include "core/cuda/cuda_info.hpp"
#include "tests/cuda/device_mirror.hpp"

namespace shardflow::cuda {
namespace {

class Device : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!testing::GpuAvailable(&why)) {
      GTEST_SKIP() << "no usable CUDA device (" << why << "); the GPU suite did not run";
    }
    InstallCudaBackend(0);
  }
};

TEST_F(Device, SaxpySelfTest) { RunSaxpySelfTest(1 << 20); }

TEST_F(Device, RoundTripThroughThePoolAndItsPeak) {
  std::vector<float> in(1 << 20), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f;
  const size_t bytes = in.size() * sizeof(float);
  void* p = DeviceAllocate(bytes);
  CopyHostToDevice(p, in.data(), bytes);
  BackendFor<float>(shardflow::Device::kCuda)
      .Scale(static_cast<int64_t>(in.size()), 2.0f, static_cast<float*>(p));
  CopyDeviceToHost(out.data(), p, bytes);
  DeviceFree(p);
  for (size_t i = 0; i < in.size(); i += 4097) EXPECT_EQ(out[i], in[i] * 2.0f) << i;
  EXPECT_GE(PeakDeviceBytes(), bytes);
}

}  // namespace
}  // namespace shardflow::cuda
