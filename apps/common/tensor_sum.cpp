#include "apps/common/tensor_sum.hpp"

#include <chrono>

#include "comm/allreduce.hpp"

namespace shardflow::apps {

void TensorSum::operator()(float* x, int64_t n) {
  const auto t0 = std::chrono::steady_clock::now();
  const comm::AllreduceOptions sum{.algorithm = comm::AllreduceAlgorithm::kAuto,
                                   .mode = comm::ReduceMode::kSum};
  const size_t count = static_cast<size_t>(n);
  if (device_ == Device::kCpu) {
    comm::Allreduce(ways_, x, count, sum);
  } else if (count > 0) {
    host_.resize(count);
    DeviceMemory& memory = DeviceMemoryFor(device_);
    memory.CopyToHost(host_.data(), x, count * sizeof(float));
    comm::Allreduce(ways_, host_.data(), count, sum);
    memory.CopyToDevice(x, host_.data(), count * sizeof(float));
  }
  seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace shardflow::apps
