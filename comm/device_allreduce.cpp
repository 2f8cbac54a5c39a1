#include "comm/device_allreduce.hpp"

#include <chrono>
#include <utility>

namespace shardflow::comm {
namespace {

class SimulatedDeviceAllreduce final : public DeviceAllreduce {
 public:
  SimulatedDeviceAllreduce(Communicator& comm, const DeviceAllreduceOptions& options)
      : comm_(comm), options_(options.host) {
    options_.mode = ReduceMode::kAverage;
  }
  std::string name() const override { return "simulated"; }
  void Start(float* data, size_t count) override {
    const auto t0 = std::chrono::steady_clock::now();
    Allreduce(comm_, data, count, options_);
    blocked_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double Finish() override { return std::exchange(blocked_, 0.0); }

 private:
  Communicator& comm_;
  AllreduceOptions options_;
  double blocked_ = 0.0;
};

}  // namespace

std::shared_ptr<const DeviceCollectives> MakeDeviceCollectives(DeviceAllreduceFactory make) {
  return std::make_shared<const DeviceAllreduceMaker>(std::move(make));
}

std::unique_ptr<DeviceAllreduce> MakeSimulatedDeviceAllreduce(
    Communicator& comm, const DeviceAllreduceOptions& options) {
  return std::make_unique<SimulatedDeviceAllreduce>(comm, options);
}

}  // namespace shardflow::comm
