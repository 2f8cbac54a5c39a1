// shardflow-bench-gpu (also reached as `shardflow-bench gpu`): training throughput of the
// presets on a CUDA device, to compare with bench/peers/torch_gpu.py on the same GPU.
//
//   shardflow-bench-gpu [--model mlp|cnn|resnet|all] [--batch 256] [--steps 50] [--tf32]
//                       [--simulate] [--json]
//   mpirun -np N shardflow-bench-gpu --allreduce ...   (device_allreduce.cpp: NCCL bus bandwidth)
//
// Per model: the model lives on the device (core/model.hpp, ModelOptions::device); each step
// waits for the previous one, copies a host batch of random 28x28x1 images and labels to the
// device (as the input pipeline hands batches over; timed alone: the H2D share), runs forward,
// softmax cross-entropy, backward and SGD with momentum, and the loss comes back to the host. Timed
// over --steps steps after 3 warm-up steps: samples/s, ms/step, the host-to-device copy's share of
// the step, and the device memory pool's peak. Checks that the loss is finite.
//
// A separate program, not a subcommand compiled into shardflow-bench: CUDA's libraries (cuBLAS
// alone) add ~200 MB to a process's peak memory when they load, and every CPU benchmark would pay
// it. --simulate runs the same code on the simulated device (the CUDA backend's host twin behind
// Device::kCuda, core/backend/host_twin.hpp): it checks the path on a machine without a GPU, and
// its throughput is not a GPU figure (the output says so).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/bench/bench_flags.hpp"
#include "core/backend/host_twin.hpp"
#include "core/error.hpp"
#include "core/loss.hpp"
#include "core/model.hpp"
#include "core/optim/optimizer.hpp"
#include "core/random.hpp"
#if defined(SHARDFLOW_BENCH_GPU_CUDA)
#include "core/cuda/cuda_backend.hpp"
#include "core/cuda/cuda_info.hpp"
#endif

namespace shardflow::bench {
namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

struct Args {
  std::vector<std::string> models = {"mlp", "cnn", "resnet"};
  int64_t batch = 256;
  int steps = 50;
  bool tf32 = false, simulate = false, json = false;
};

// Returns false after printing the usage for --help.
bool Parse(int argc, char** argv, Args& a) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  for (FlagCursor f(args, "gpu"); f.Next();) {
    if (f.Is("--model")) {
      const std::string v = f.Value();
      if (v == "all") {
        a.models = {"mlp", "cnn", "resnet"};
      } else if (v == "mlp" || v == "cnn" || v == "resnet") {
        a.models = {v};
      } else {
        throw Error(ErrorCode::kInvalidArgument, "--model must be mlp, cnn, resnet or all");
      }
    } else if (f.Is("--batch")) {
      a.batch = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--steps")) {
      a.steps = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--tf32")) {
      a.tf32 = true;
    } else if (f.Is("--simulate")) {
      a.simulate = true;
    } else if (f.Is("--json")) {
      a.json = true;
    } else if (f.IsHelp()) {
      std::printf(
          "usage: shardflow-bench gpu [--model mlp|cnn|resnet|all (all)] [--batch 256]\n"
          "                           [--steps 50] [--tf32] [--simulate] [--json]\n"
          "       mpirun -np N shardflow-bench gpu --allreduce [--sizes 1M,16M,64M] [--iters 10]\n"
          "                           [--reps 5] [--simulate] [--json]\n");
      return false;
    } else {
      f.Unknown();
    }
  }
  return true;
}

// The device the run uses: the GPU (device 0) or the simulated one. `name` describes it.
std::unique_ptr<SimulatedCudaDevice> UseDevice(const Args& a, std::string& name) {
  if (a.simulate) {
    name = "simulated (host twin of the CUDA backend on the CPU; not a GPU figure)";
    return std::make_unique<SimulatedCudaDevice>();
  }
#if defined(SHARDFLOW_BENCH_GPU_CUDA)
  cuda::InstallCudaBackend(0);  // throws, naming the device and CUDA's reason, without a GPU
  cuda::SetTf32(a.tf32);
  name = "CUDA device 0" + std::string(a.tf32 ? " (TF32 on)" : "");
  return nullptr;
#else
  throw Error(ErrorCode::kInvalidArgument,
              "this build has no CUDA backend (built with SHARDFLOW_CUDA=OFF or without nvcc)",
              {.hint = "--simulate runs the path on the CPU"});
#endif
}

struct Result {
  double samples_per_s = 0, ms_per_step = 0, h2d_share = 0, loss = 0;
};

Result RunModel(const std::string& name, const Args& a) {
  Sequential<float> m(name, {28, 28, 1}, {.seed = 42, .device = Device::kCuda});
  auto opt = MakeOptimizer({.name = "sgd", .momentum = 0.9}, m.arena().size());
  Tensor x(DType::kFloat32, {a.batch, 28, 28, 1}), labels(DType::kInt64, {a.batch});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = RandomUniform(1, 0, i);
  for (int64_t i = 0; i < a.batch; ++i) labels.data<int64_t>()[i] = i % 10;
  Tensor d;
  double h2d = 0, loss = 0;
  Clock::time_point start;
  for (int s = 0; s < a.steps + 3; ++s) {
    if (s == 3) start = Clock::now(), h2d = 0;
    // Reading a parameter back waits for the previous step's queued kernels, so the copy's time
    // is the copy's alone.
    (void)m.arena().params_tensor().Slice(0, 1).To(Device::kCpu);
    const auto t0 = Clock::now();
    const Tensor xd = x.To(Device::kCuda), yd = labels.To(Device::kCuda);  // synchronous copies
    h2d += Seconds(t0, Clock::now());
    m.set_step(static_cast<uint64_t>(s));
    m.arena().ZeroGrads();
    loss = SoftmaxCrossEntropy<float>(m.Forward(xd, true), yd, &d);  // waits for the kernels
    m.Backward(d);
    opt->Step(m.arena(), 0.01);
  }
  // The last update is queued on the device; reading a parameter back waits for it.
  (void)m.arena().params_tensor().Slice(0, 1).To(Device::kCpu);
  const double wall = Seconds(start, Clock::now());
  if (!std::isfinite(loss)) {
    throw Error(ErrorCode::kInternal, name + ": the loss is not finite after training");
  }
  return {.samples_per_s = static_cast<double>(a.batch) * a.steps / wall,
          .ms_per_step = 1e3 * wall / a.steps,
          .h2d_share = h2d / wall,
          .loss = loss};
}

int Run(int argc, char** argv) {
  Args a;
  if (!Parse(argc, argv, a)) return 0;
  std::string device;
  const auto simulated = UseDevice(a, device);
  std::printf("device: %s\n", device.c_str());
  for (const std::string& name : a.models) {
    const Result r = RunModel(name, a);
    std::printf("model %s, batch %lld, %d steps: %.0f samples/s (%.2f ms/step), H2D %.1f%%\n",
                name.c_str(), static_cast<long long>(a.batch), a.steps, r.samples_per_s,
                r.ms_per_step, 100.0 * r.h2d_share);
    if (a.json) {
      const nlohmann::json j = {{"bench", "gpu"},
                                {"model", name},
                                {"device", device},
                                {"simulated", a.simulate},
                                {"batch", a.batch},
                                {"steps", a.steps},
                                {"samples_per_s", r.samples_per_s},
                                {"ms_per_step", r.ms_per_step},
                                {"h2d_share", r.h2d_share},
                                {"loss", r.loss}};
      std::printf("%s\n", j.dump().c_str());
    }
  }
#if defined(SHARDFLOW_BENCH_GPU_CUDA)
  if (!a.simulate) {
    std::printf("device memory pool peak: %.1f MiB\n",
                static_cast<double>(cuda::PeakDeviceBytes()) / (1 << 20));
  }
#endif
  return 0;
}

}  // namespace
}  // namespace shardflow::bench

namespace shardflow::bench {
int RunDeviceAllreduce(int argc, char** argv);  // device_allreduce.cpp
}  // namespace shardflow::bench

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--allreduce")
      return shardflow::bench::RunDeviceAllreduce(argc, argv);
  }
  try {
    return shardflow::bench::Run(argc, argv);
  } catch (const shardflow::Error& e) {
    std::fprintf(stderr, "shardflow-bench-gpu: error: %s\n", e.what());
    return 2;
  }
}
