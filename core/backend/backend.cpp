#include "core/backend/backend.hpp"

#include <array>
#include <string>

#include "core/cpu/cpu_backend.hpp"

namespace shardflow {
namespace {

constexpr size_t kDevices = 2;  // Device::kCpu, Device::kCuda

template <typename T>
std::array<Backend<T>*, kDevices>& Table() {
  static std::array<Backend<T>*, kDevices> table{&cpu::CpuBackend<T>(), nullptr};
  return table;
}

}  // namespace

template <typename T>
Backend<T>& BackendFor(Device device) {
  const auto i = static_cast<size_t>(device);
  Backend<T>* b = i < kDevices ? Table<T>()[i] : nullptr;
  if (b == nullptr) {
    throw Error(ErrorCode::kInternal, std::string("no compute backend for device ") +
                                          DeviceName(device) + " in this build");
  }
  return *b;
}

template <typename T>
void RegisterBackend(Device device, Backend<T>* backend) {
  const auto i = static_cast<size_t>(device);
  if (i >= kDevices) {
    throw Error(ErrorCode::kInternal,
                std::string("cannot register a backend for device ") + DeviceName(device));
  }
  Table<T>()[i] = backend;
}

void ThrowLabelOutOfRange(int64_t label, int64_t row, int64_t k) {
  throw Error(ErrorCode::kInvalidArgument,
              "label " + std::to_string(label) + " of batch row " + std::to_string(row) +
                  " is outside [0, " + std::to_string(k) + ")",
              {.record = row, .hint = "check the number of classes of the model's last layer"});
}

template Backend<float>& BackendFor<float>(Device);
template Backend<double>& BackendFor<double>(Device);
template void RegisterBackend<float>(Device, Backend<float>*);
template void RegisterBackend<double>(Device, Backend<double>*);

}  // namespace shardflow
