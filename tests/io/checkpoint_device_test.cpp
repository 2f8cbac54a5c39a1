// Checkpoints stay device-independent: a model trained on the CUDA device (here the simulated
// one, core/backend/host_twin.hpp: device tensors in host memory, flagged cuda) saves a
// checkpoint that a CPU model loads, and a CPU checkpoint loads into a device model, with
// parameters, batch-norm statistics and optimizer slots bit for bit; a load that fails leaves the
// device model as it was.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/backend/host_twin.hpp"
#include "core/loss.hpp"
#include "core/random.hpp"
#include "io/checkpoint/checkpoint.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace checkpoint_device_test {

constexpr const char* kSpec =
    "conv:4:3x3:same, batchnorm, relu, maxpool:2, flatten, dropout:0.2, dense:5";
const Shape kInput = {6, 6, 1};

void TrainSteps(Sequential<float>& m, Optimizer& opt, int64_t from, int64_t count) {
  for (int64_t s = from; s < from + count; ++s) {
    Tensor x(DType::kFloat32, {8, 6, 6, 1}), y(DType::kInt32, {8}), d;
    for (int64_t i = 0; i < x.num_elements(); ++i)
      x.data<float>()[i] = static_cast<float>(RandomNormal(1, s, i));
    for (int64_t i = 0; i < 8; ++i) y.data<int32_t>()[i] = static_cast<int32_t>((i + s) % 5);
    m.set_step(static_cast<uint64_t>(s));
    m.arena().ZeroGrads();
    SoftmaxCrossEntropy<float>(m.Forward(x, true), y, &d);
    m.Backward(d);
    opt.Step(m.arena(), 0.05);
  }
}

// Everything a checkpoint holds, copied to the host: parameters, buffers, optimizer slots.
std::vector<float> State(Sequential<float>& m, Optimizer& opt) {
  std::vector<float> out;
  auto add = [&](const Tensor& t) {
    const Tensor h = t.To(Device::kCpu);
    out.insert(out.end(), h.data<float>(), h.data<float>() + h.num_elements());
  };
  add(m.arena().params_tensor());
  for (const NamedTensor& b : m.Buffers()) add(*b.tensor);
  for (const NamedTensor& s : opt.Slots()) add(*s.tensor);
  return out;
}

bool Same(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(CheckpointDevice, DeviceCheckpointLoadsOnTheCpuAndBack) {
  SimulatedCudaDevice cuda;
  testing::ScratchDir dir("ckpt_device");
  const OptimizerOptions oo{.name = "adamw", .weight_decay = 0.01};
  Sequential<float> gpu(kSpec, kInput, {.device = Device::kCuda});
  auto gpu_opt = MakeOptimizer(oo, gpu.arena().size());
  TrainSteps(gpu, *gpu_opt, 0, 3);
  const std::vector<float> trained = State(gpu, *gpu_opt);
  const std::string from_gpu =
      SaveCheckpoint({.dir = (dir / "a").string()}, gpu, gpu_opt.get(), {.step = 3});
  EXPECT_TRUE(Same(State(gpu, *gpu_opt), trained)) << "saving changed the device model";
  EXPECT_EQ(gpu.arena().device(), Device::kCuda);

  Sequential<float> cpu(kSpec, kInput, {.seed = 7});
  auto cpu_opt = MakeOptimizer(oo, cpu.arena().size());
  TrainSteps(cpu, *cpu_opt, 50, 1);  // state that the load must replace
  EXPECT_EQ(LoadCheckpoint(from_gpu, cpu, cpu_opt.get()).step, 3);
  EXPECT_TRUE(Same(State(cpu, *cpu_opt), trained));

  const std::string from_cpu =
      SaveCheckpoint({.dir = (dir / "b").string()}, cpu, cpu_opt.get(), {.step = 3});
  // Same seed as gpu (it also keys the dropout masks); scrambled by a step the load replaces.
  Sequential<float> gpu2(kSpec, kInput, {.device = Device::kCuda});
  auto gpu2_opt = MakeOptimizer(oo, gpu2.arena().size());
  TrainSteps(gpu2, *gpu2_opt, 60, 1);
  EXPECT_EQ(LoadCheckpoint(from_cpu, gpu2, gpu2_opt.get()).step, 3);
  EXPECT_EQ(gpu2.arena().device(), Device::kCuda);
  EXPECT_TRUE(Same(State(gpu2, *gpu2_opt), trained));
  // Resumed on the device, it continues exactly as the uninterrupted device run.
  TrainSteps(gpu, *gpu_opt, 3, 2);
  TrainSteps(gpu2, *gpu2_opt, 3, 2);
  EXPECT_TRUE(Same(State(gpu2, *gpu2_opt), State(gpu, *gpu_opt)));

  // Weights only, into a fresh device model.
  Sequential<float> gpu3(kSpec, kInput, {.seed = 5, .device = Device::kCuda});
  LoadWeights(from_gpu, gpu3);
  const Tensor w = gpu3.arena().params_tensor().To(Device::kCpu);
  EXPECT_TRUE(Same(std::vector<float>(w.data<float>(), w.data<float>() + w.num_elements()),
                   std::vector<float>(trained.begin(), trained.begin() + w.num_elements())));
}

TEST(CheckpointDevice, AFailedLoadLeavesTheDeviceModelAsItWas) {
  SimulatedCudaDevice cuda;
  testing::ScratchDir dir("ckpt_device_bad");
  Sequential<float> m(kSpec, kInput, {.device = Device::kCuda});
  auto opt = MakeOptimizer({.name = "sgd"}, m.arena().size());
  TrainSteps(m, *opt, 0, 2);
  const std::string path = SaveCheckpoint({.dir = dir.path().string()}, m, opt.get(), {.step = 2});
  TrainSteps(m, *opt, 2, 1);
  const std::vector<float> before = State(m, *opt);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);  // truncated
  EXPECT_THROW(LoadCheckpoint(path, m, opt.get()), Error);
  EXPECT_TRUE(Same(State(m, *opt), before));
  EXPECT_EQ(m.arena().device(), Device::kCuda);
}

}  // namespace checkpoint_device_test
}  // namespace shardflow
