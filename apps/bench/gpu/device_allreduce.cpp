// shardflow-bench gpu --allreduce: the device all-reduce of gradients (comm/device_allreduce.hpp:
// NCCL on GPUs) beside the host-staged path the strategy falls back to (copy to the host,
// comm/'s all-reduce, copy back), interleaved call by call, nccl-tests style.
//
//   mpirun -np N shardflow-bench gpu --allreduce [--sizes 1M,16M,64M] [--iters 10] [--reps 5]
//                                     [--simulate] [--json]
//
// Per size, --reps rounds of --iters calls of each path (A B A B ...): time per call (the
// slowest rank's), bus bandwidth busbw = bytes / time * 2 (N - 1) / N, medians over the rounds,
// and the device path's busbw over the staged one's. The device path's result is checked
// against the exact average (rank r contributes r + 1). Each rank takes GPU (local rank) of the
// visible ones. --simulate runs both paths on the simulated device (comm/'s all-reduce in place
// stands in for NCCL): it checks the benchmark's path here, and its figures are not GPU figures.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/bench/bench_flags.hpp"
#include "comm/allreduce.hpp"
#include "comm/collectives.hpp"
#include "comm/communicator.hpp"
#include "comm/device_allreduce.hpp"
#include "core/backend/host_twin.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"
#include "core/tensor.hpp"
#if defined(SHARDFLOW_BENCH_GPU_CUDA)
#include "comm/nccl/nccl_allreduce.hpp"
#include "core/cuda/cuda_backend.hpp"
#endif

namespace shardflow::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<size_t> sizes = {size_t{1} << 20, size_t{16} << 20, size_t{64} << 20};
  int iters = 10, reps = 5;
  bool simulate = false, json = false;
};

Options Parse(const std::vector<std::string>& args) {
  Options o;
  for (FlagCursor f(args, "gpu --allreduce"); f.Next();) {
    if (f.Is("--allreduce")) {
      continue;
    } else if (f.Is("--sizes")) {
      o.sizes = ParseByteList(f.flag(), f.Value());
    } else if (f.Is("--iters")) {
      o.iters = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--reps")) {
      o.reps = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--simulate")) {
      o.simulate = true;
    } else if (f.Is("--json")) {
      o.json = true;
    } else {
      f.Unknown();
    }
  }
  return o;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// The slowest rank's seconds per call of `fn`.
template <typename Fn>
double TimeCalls(comm::Communicator& world, int iters, Fn fn) {
  comm::Barrier(world);
  const auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) fn();
  const double s = std::chrono::duration<double>(Clock::now() - t0).count() / iters;
  return comm::AllreduceDouble(world, s, comm::ReduceOp::kMax);
}

int Run(const Options& o, MpiEnvironment& env) {
  comm::Communicator world(comm::Group::kWorld);
  comm::Communicator own(world.raw());  // the device all-reduce's
  std::unique_ptr<comm::DeviceAllreduce> device =
      (*comm::DeviceAllreduceFor(Device::kCuda))(own, {.watchdog_seconds = 120});
  const int n = world.size();
  const bool root = env.is_chief();
  DeviceMemory& mem = DeviceMemoryFor(Device::kCuda);
  if (root) {
    std::printf("device all-reduce: %s%s, %d ranks\n", device->name().c_str(),
                o.simulate ? " (simulated device: not GPU figures)" : "", n);
    std::printf("%12s %14s %14s %10s\n", "bytes", "device GB/s", "staged GB/s", "ratio");
  }
  int failures = 0;
  for (size_t bytes : o.sizes) {
    const size_t count = std::max<size_t>(1, bytes / sizeof(float));
    Tensor buffer(DType::kFloat32, {static_cast<int64_t>(count)}, Device::kCuda);
    std::vector<float> host(count, static_cast<float>(world.rank() + 1));
    float* d = static_cast<float*>(buffer.raw_data());
    std::vector<double> dev_bw, staged_bw;
    const double bus = 2.0 * (n - 1) / std::max(1, n) * static_cast<double>(count * sizeof(float));
    for (int r = 0; r < o.reps; ++r) {
      mem.CopyToDevice(d, host.data(), count * sizeof(float));
      const double t_dev = TimeCalls(world, o.iters, [&] {
        device->Start(d, count);
        device->Finish();
      });
      const double t_staged = TimeCalls(world, o.iters, [&] {
        mem.CopyToHost(host.data(), d, count * sizeof(float));
        comm::Allreduce(world, host.data(), count, {.mode = comm::ReduceMode::kAverage});
        mem.CopyToDevice(d, host.data(), count * sizeof(float));
      });
      dev_bw.push_back(bus / t_dev);
      staged_bw.push_back(bus / t_staged);
    }
    // The check: one device all-reduce of fresh contributions gives the exact average.
    std::vector<float> mine(count, static_cast<float>(world.rank() + 1)), got(count);
    mem.CopyToDevice(d, mine.data(), count * sizeof(float));
    device->Start(d, count);
    device->Finish();
    mem.CopyToHost(got.data(), d, count * sizeof(float));
    const float want = static_cast<float>(n + 1) / 2.0f;
    const bool ok = std::all_of(got.begin(), got.end(), [want](float v) { return v == want; });
    failures += comm::AllreduceInt64(world, ok ? 0 : 1, comm::ReduceOp::kSum) > 0 ? 1 : 0;
    const double dev = Median(dev_bw), staged = Median(staged_bw);
    if (root) {
      std::printf("%12zu %14.3f %14.3f %9.2fx%s\n", count * sizeof(float), dev / 1e9, staged / 1e9,
                  dev / staged, ok ? "" : "  RESULT WRONG");
      if (o.json) {
        const nlohmann::json j = {{"bench", "gpu_allreduce"},
                                  {"device_allreduce", device->name()},
                                  {"simulated", o.simulate},
                                  {"ranks", n},
                                  {"bytes", count * sizeof(float)},
                                  {"device_busbw_gbs", dev / 1e9},
                                  {"staged_busbw_gbs", staged / 1e9},
                                  {"ratio", dev / staged},
                                  {"iters", o.iters},
                                  {"reps", o.reps},
                                  {"ok", ok}};
        std::printf("%s\n", j.dump().c_str());
      }
      std::fflush(stdout);
    }
  }
  return failures > 0 ? 1 : 0;
}

}  // namespace

int RunDeviceAllreduce(int argc, char** argv) {
  Options o;
  std::unique_ptr<SimulatedCudaDevice> simulated;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment& env) {
        o = Parse(std::vector<std::string>(argv + 1, argv + argc));
        if (o.simulate) {
          simulated = std::make_unique<SimulatedCudaDevice>(
              comm::MakeDeviceCollectives(comm::MakeSimulatedDeviceAllreduce));
          return;
        }
#if defined(SHARDFLOW_BENCH_GPU_CUDA)
        // Names the device and CUDA's reason when it cannot.
        cuda::InstallCudaBackend(env.local_rank(), comm::NcclCollectives());
#else
        (void)env;
        throw Error(ErrorCode::kInvalidArgument,
                    "this build has no CUDA backend (built with SHARDFLOW_CUDA=OFF or without "
                    "nvcc)",
                    {.hint = "--simulate runs the path on the CPU"});
#endif
      },
      [&](MpiEnvironment& env) { return Run(o, env); });
}

}  // namespace shardflow::bench
