// GPU-only, under mpiexec: the NCCL device all-reduce (comm/nccl/nccl_allreduce.hpp) against
// comm/'s all-reduce of the same host data, over buckets of awkward sizes started in order and
// finished once, twice in a row (a second step on the same communicator). Each rank takes its
// own GPU (rank % visible devices); with fewer GPUs than ranks, or none, every rank skips
// with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "comm/allreduce.hpp"
#include "comm/communicator.hpp"
#include "comm/device_allreduce.hpp"
#include "comm/nccl/nccl_allreduce.hpp"
#include "core/backend/backend.hpp"
#include "core/cuda/cuda_backend.hpp"
#include "core/cuda/cuda_info.hpp"
#include "tests/cuda/device_mirror.hpp"

namespace shardflow::comm {
namespace {

float Value(int rank, int64_t i) {
  return static_cast<float>((rank + 1) * 0.37 + static_cast<double>(i % 101) * 0.013);
}

TEST(NcclAllreduceGpu, EqualsCommAllreduceOverAwkwardBuckets) {
  Communicator comm(Group::kWorld);
  std::string why;
  const bool gpu = cuda::testing::GpuAvailable(&why);
  const int devices = gpu ? cuda::QueryCudaInfo().device_count : 0;
  if (!gpu) GTEST_SKIP() << "no usable CUDA device (" << why << "); the GPU suite did not run";
  if (devices < comm.size()) {
    GTEST_SKIP() << comm.size() << " ranks need as many GPUs; " << devices << " visible";
  }
  cuda::InstallCudaBackend(comm.rank() % devices, NcclCollectives());
  Communicator own(comm.raw());
  std::unique_ptr<DeviceAllreduce> nccl =
      (*DeviceAllreduceFor(Device::kCuda))(own, {.watchdog_seconds = 60});
  EXPECT_EQ(nccl->name(), "nccl");
  EXPECT_EQ(nccl->Finish(), 0.0);  // nothing started: nothing to wait for

  const std::vector<size_t> buckets = {1, 0, 7, (1u << 20) + 3, 1000};
  size_t total = 0;
  for (size_t b : buckets) total += b;
  std::vector<float> host(total);
  for (size_t i = 0; i < total; ++i) host[i] = Value(comm.rank(), static_cast<int64_t>(i));
  std::vector<float> want = host;
  Allreduce(comm, want.data(), want.size(), {.mode = ReduceMode::kAverage});

  float* dev = static_cast<float*>(cuda::DeviceAllocate(total * sizeof(float)));
  for (int step = 0; step < 2; ++step) {
    cuda::CopyHostToDevice(dev, host.data(), total * sizeof(float));
    // Compute queued on the backend's stream before the reductions (backprop's place): the
    // all-reduce must see its result, so the sums are of the doubled values.
    BackendFor<float>(Device::kCuda).Scale(static_cast<int64_t>(total), 2.0f, dev);
    size_t offset = 0;
    for (size_t b : buckets) {
      nccl->Start(dev + offset, b);
      offset += b;
    }
    nccl->Finish();
    std::vector<float> got(total);
    cuda::CopyDeviceToHost(got.data(), dev, total * sizeof(float));
    double err = 0.0;
    for (size_t i = 0; i < total; ++i) {
      err = std::max(err, std::fabs(double{got[i]} - 2.0 * want[i]));
    }
    // NCCL's average and comm/'s may round the division differently: an ulp of values < 4.
    EXPECT_LE(err, 1e-6) << "step " << step;
  }
  cuda::DeviceFree(dev);
}

}  // namespace
}  // namespace shardflow::comm
