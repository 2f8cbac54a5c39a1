// Device selection (apps/common/device_choice.hpp) with made-up probe results: what each value
// of train.device gives, and the one-line errors a rank prints when it cannot have its GPU.
#include "apps/common/device_choice.hpp"

#include <gtest/gtest.h>

#include <string>

#include "core/error.hpp"

namespace shardflow::apps {
namespace device_choice_test {

// Whether `text` holds `part`, printing both when it does not.
::testing::AssertionResult Has(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

DeviceProbe NoGpu() {
  return {.device_count = 0, .error = "cudaGetDeviceCount: no CUDA-capable device is detected"};
}

DeviceProbe Gpus(int count, std::string visible) {
  return {.device_count = count, .cuda_visible_devices = std::move(visible)};
}

DeviceRequest Request(std::string device, int rank = 1, int local_rank = 1) {
  return {.device = std::move(device), .rank = rank, .local_rank = local_rank, .host = "node3"};
}

// The Error ChooseDevice throws for `request` and `probe` (fails the test when none).
Error ErrorOf(const DeviceRequest& request, const DeviceProbe& probe) {
  try {
    ChooseDevice(request, probe);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "no error for " << request.device;
  return Error(ErrorCode::kInternal, "none");
}

TEST(DeviceChoiceTest, CpuIsAlwaysFineAndIgnoresTheProbe) {
  for (const DeviceProbe& probe : {NoGpu(), Gpus(4, "(unset)")}) {
    const DeviceChoice c = ChooseDevice(Request("cpu"), probe);
    EXPECT_EQ(c.device, Device::kCpu);
    EXPECT_EQ(c.ordinal, -1);
    EXPECT_FALSE(c.warn);
    EXPECT_EQ(c.note, "device: cpu (train.device = cpu)");
  }
}

TEST(DeviceChoiceTest, CudaWithoutGpuIsOneLineNamingRankHostAndWhatItSaw) {
  const Error e = ErrorOf(Request("cuda"), NoGpu());
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(ExitCodeFor(e.code()), 2);
  EXPECT_EQ(e.context().key, "train.device");
  const std::string what = e.what();
  EXPECT_TRUE(Has(what,
                  "rank 1 on node3: train.device = cuda but no usable GPU (cudaGetDeviceCount: no "
                  "CUDA-capable device is detected; CUDA_VISIBLE_DEVICES=(unset))"));
  EXPECT_EQ(what.find('\n'), std::string::npos);
}

TEST(DeviceChoiceTest, CudaInABuildWithoutCudaSaysSo) {
  DeviceProbe probe = {.device_count = 0,
                       .error =
                           "this build has no CUDA backend (built with SHARDFLOW_CUDA=OFF or "
                           "without nvcc)",
                       .cuda_visible_devices = "\"\""};
  const std::string what = ErrorOf(Request("cuda", 0, 0), probe).what();
  EXPECT_TRUE(Has(what, "rank 0 on node3"));
  EXPECT_TRUE(Has(what, "this build has no CUDA backend"));
  EXPECT_TRUE(Has(what, "CUDA_VISIBLE_DEVICES=\"\""));
}

TEST(DeviceChoiceTest, AutoWithoutGpuIsCpuAndSaysWhy) {
  const DeviceChoice c = ChooseDevice(Request("auto"), NoGpu());
  EXPECT_EQ(c.device, Device::kCpu);
  EXPECT_FALSE(c.warn);
  EXPECT_TRUE(Has(c.note, "device: cpu (train.device = auto: rank 1 on node3 sees no usable GPU"));
  EXPECT_TRUE(Has(c.note, "no CUDA-capable device is detected"));
  EXPECT_TRUE(Has(c.note, "CUDA_VISIBLE_DEVICES=(unset)"));
}

TEST(DeviceChoiceTest, AutoWithGpuButNoBackendFallsBackToCpuWithAWarning) {
  const DeviceChoice c = ChooseDevice(Request("auto"), Gpus(2, "0,1"));
  EXPECT_EQ(c.device, Device::kCpu);
  EXPECT_EQ(c.ordinal, -1);
  EXPECT_TRUE(c.warn);
  EXPECT_TRUE(Has(c.note, "device: cpu"));
  EXPECT_TRUE(Has(c.note, "sees 2 GPUs (CUDA_VISIBLE_DEVICES=0,1)"));
  EXPECT_TRUE(Has(c.note, "run shardflow-train-cuda"));
}

TEST(DeviceChoiceTest, CudaWithGpuButNoBackendNamesTheProgramToRun) {
  for (const DeviceProbe& probe : {Gpus(1, "3"), Gpus(4, "(unset)")}) {
    const Error e = ErrorOf(Request("cuda"), probe);
    EXPECT_EQ(ExitCodeFor(e.code()), 2);
    EXPECT_TRUE(Has(e.what(),
                    "train.device = cuda: this program has no CUDA backend (it would load ~200 MB "
                    "of CUDA libraries into every CPU run): run shardflow-train-cuda"));
  }
  DeviceRequest predict = Request("cuda");
  predict.work = "predicting";
  EXPECT_TRUE(Has(ErrorOf(predict, Gpus(1, "0")).what(),
                  "this program has no CUDA backend (it would load ~200 MB of CUDA libraries "
                  "into every CPU run): run shardflow-predict-cuda"));
  DeviceRequest serve = Request("cuda");
  serve.work = "serving";
  EXPECT_TRUE(Has(ErrorOf(serve, Gpus(1, "0")).what(), "run shardflow-serve-cuda"));
}

TEST(DeviceChoiceTest, WithTheBackendCudaAndAutoTakeTheRanksGpu) {
  DeviceRequest r = Request("cuda", 6, 2);
  r.has_backend = true;
  const DeviceChoice c = ChooseDevice(r, Gpus(4, "(unset)"));
  EXPECT_EQ(c.device, Device::kCuda);
  EXPECT_EQ(c.ordinal, 2);
  EXPECT_FALSE(c.warn);
  EXPECT_TRUE(Has(c.note, "device: cuda (train.device = cuda: rank 6 on node3 takes GPU 2 of 4"));
  r.device = "auto";
  EXPECT_EQ(ChooseDevice(r, Gpus(1, "5")).ordinal, 0);
  EXPECT_EQ(ChooseDevice(r, NoGpu()).device, Device::kCpu);
}

TEST(DeviceChoiceTest, TheSimulatedDeviceNeedsNoBackend) {
  const DeviceProbe simulated{
      .device_count = 1, .cuda_visible_devices = "(simulated)", .simulated = true};
  const DeviceChoice c = ChooseDevice(Request("cuda", 1, 0), simulated);
  EXPECT_EQ(c.device, Device::kCuda);
  EXPECT_EQ(c.ordinal, 0);
  EXPECT_TRUE(Has(c.note, "the simulated device (SHARDFLOW_SIMULATE_CUDA=1"));
  // Prediction and the server run on it too.
  for (const char* work : {"predicting", "serving"}) {
    DeviceRequest r = Request("auto", 1, 0);
    r.work = work;
    EXPECT_EQ(ChooseDevice(r, simulated).device, Device::kCuda) << work;
  }
}

TEST(DeviceChoiceTest, LocalRankBeyondTheVisibleGpusNamesTheNumbers) {
  const std::string what = ErrorOf(Request("cuda", 5, 2), Gpus(2, "0,1")).what();
  EXPECT_TRUE(Has(what,
                  "rank 5 on node3: train.device = cuda: local rank 2 but only 2 GPUs visible "
                  "(CUDA_VISIBLE_DEVICES=0,1)"));
  EXPECT_FALSE(Has(what, "not available"));
  // Unset CUDA_VISIBLE_DEVICES and one GPU: the second rank of the node has none of its own.
  EXPECT_TRUE(Has(ErrorOf(Request("cuda", 1, 1), Gpus(1, "(unset)")).what(),
                  "local rank 1 but only 1 GPU visible (CUDA_VISIBLE_DEVICES=(unset))"));
}

// Under parameter servers the number is the worker's among its node's workers (servers take no
// GPU), and the hint says so.
TEST(DeviceChoiceTest, AWorkerBeyondTheVisibleGpusIsNamedAsAWorker) {
  DeviceRequest r = Request("cuda", 5, 2);
  r.servers_take_no_gpu = true;
  const std::string what = ErrorOf(r, Gpus(2, "(unset)")).what();
  EXPECT_TRUE(Has(what, "train.device = cuda: worker 2 of this node but only 2 GPUs visible"))
      << what;
  EXPECT_TRUE(Has(what, "parameter servers take none")) << what;
  EXPECT_FALSE(Has(what, "local rank")) << what;
}

TEST(DeviceChoiceTest, GpuOrdinalIsTheLocalRankAmongTheVisibleDevices) {
  EXPECT_EQ(GpuOrdinal(Request("cuda", 6, 2), Gpus(4, "(unset)")), 2);
  EXPECT_EQ(GpuOrdinal(Request("cuda", 6, 2), Gpus(4, "4,5,6,7")), 2);
  EXPECT_EQ(GpuOrdinal(Request("cuda", 0, 0), Gpus(1, "(unset)")), 0);
  EXPECT_EQ(GpuOrdinal(Request("cuda", 3, 3), Gpus(1, "3")), 0);  // launch.sh's binding
  EXPECT_THROW(GpuOrdinal(Request("cuda", 3, 3), NoGpu()), Error);
}

TEST(DeviceChoiceTest, OneGpuLeftByTheLauncherIsDeviceZeroWhateverTheLocalRank) {
  // slurm/launch.sh sets CUDA_VISIBLE_DEVICES to the rank's one GPU: local rank 3 is then not
  // "past the visible count" (the refusal is the program's, not the binding's).
  const std::string what = ErrorOf(Request("cuda", 3, 3), Gpus(1, "3")).what();
  EXPECT_TRUE(Has(what, "no CUDA backend"));
  EXPECT_FALSE(Has(what, "local rank"));
}

TEST(DeviceChoiceTest, UnknownValueNamesKeyAndAllowedValues) {
  const Error e = ErrorOf(Request("tpu"), NoGpu());
  EXPECT_EQ(e.context().key, "train.device");
  EXPECT_TRUE(Has(e.what(), "'tpu' for train.device: expected cpu | cuda | auto"));
}

TEST(DeviceChoiceTest, VisibleDevicesText) {
  EXPECT_EQ(VisibleDevicesText(nullptr), "(unset)");
  EXPECT_EQ(VisibleDevicesText(""), "\"\"");
  EXPECT_EQ(VisibleDevicesText("0,1"), "0,1");
}

}  // namespace device_choice_test
}  // namespace shardflow::apps
