// GPU-only: DeviceInput (apps/train/device_input.hpp) over the CUDA backend's staging
// (core/cuda/cuda_staging.cu: pinned buffers, a copy stream, events). Each step takes its batch,
// stages the next one while a chain of GEMMs reads the current batch on the compute stream, and
// then reads the batch back: every batch arrives with its own bytes (a copy that overtook the
// compute reading the slot, or a compute that did not wait for its copy, would show), most were
// copied during the previous step, and the device timed every step. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "apps/train/device_input.hpp"
#include "core/backend/backend.hpp"
#include "core/cuda/cuda_backend.hpp"
#include "core/device_staging.hpp"
#include "tests/cuda/device_mirror.hpp"

namespace shardflow::train {
namespace {

const apps::BatchSpec kSpec{
    .input_feature = "image", .label_feature = "label", .input_shape = {32, 32}, .scale = 1.0};

pipeline::Element Batch(int64_t rows, int step) {
  Tensor image(DType::kUInt8, {rows, 32, 32});
  Tensor label(DType::kInt64, {rows});
  for (int64_t i = 0; i < image.num_elements(); ++i) {
    image.data<uint8_t>()[i] = static_cast<uint8_t>((i * 7 + step * 13) % 251);
  }
  for (int64_t i = 0; i < rows; ++i) label.data<int64_t>()[i] = (i + step) % 10;
  pipeline::Element e;
  e.Set("image", image);
  e.Set("label", label);
  return e;
}

TEST(DeviceInputGpu, EveryBatchArrivesWithItsBytesWhileComputeReadsThePrevious) {
  std::string why;
  if (!cuda::testing::GpuAvailable(&why)) {
    GTEST_SKIP() << "no usable CUDA device (" << why << "); the GPU suite did not run";
  }
  cuda::InstallCudaBackend(0);
  DeviceStagingFor(Device::kCuda).TakeTimes();  // from here on
  constexpr int kSteps = 12;
  constexpr int64_t kRows = 256;
  std::vector<pipeline::Element> batches;
  for (int s = 0; s < kSteps; ++s) batches.push_back(Batch(kRows, s));
  Backend<float>& gpu = BackendFor<float>(Device::kCuda);
  Tensor scratch(DType::kFloat32, {1024, 1024}, Device::kCuda);
  {
    DeviceInput in(Device::kCuda, kSpec);
    for (int s = 0; s < kSteps; ++s) {
      const apps::ModelBatch mb = in.Take(batches[s]);
      if (s + 1 < kSteps) in.Prefetch(batches[s + 1]);
      // Compute that reads the batch for a while: x^T x (1024 x 1024 over 256 rows), 20 times.
      for (int r = 0; r < 20; ++r) {
        gpu.Gemm(true, false, 1024, 1024, kRows, 1.0f, mb.x.device_data<float>(), 1024,
                 mb.x.device_data<float>(), 1024, 0.0f, scratch.device_data<float>(), 1024);
      }
      in.StepIssued();
      const Tensor x = mb.x.To(Device::kCpu), labels = mb.labels.To(Device::kCpu);
      Tensor want_scratch;
      const apps::ModelBatch want = apps::ToModelBatch(batches[s], kSpec, &want_scratch);
      ASSERT_EQ(std::memcmp(x.raw_data(), want.x.raw_data(), want.x.byte_size()), 0) << s;
      ASSERT_EQ(std::memcmp(labels.raw_data(), want.labels.raw_data(), want.labels.byte_size()), 0)
          << s;
    }
    EXPECT_EQ(in.stats().batches, kSteps);
    EXPECT_EQ(in.stats().overlapped, kSteps - 1);
  }
  const StagingTimes t = DeviceStagingFor(Device::kCuda).TakeTimes();
  EXPECT_TRUE(t.measured);
  EXPECT_EQ(t.steps, kSteps);
  EXPECT_GT(t.compute_active_s, 0.0);
}

}  // namespace
}  // namespace shardflow::train
