// Tensor: a typed, shaped block of memory on a device.
//
// A Tensor either owns its storage (shared, reference-counted: copies of a Tensor share the
// buffer, like views) or views memory owned by someone else (the caller keeps that memory alive
// for as long as the view is used). Element types are the ones data and training need:
// float32 for compute; uint8, int32, int64 (and float64) for data. Storage is row-major and
// contiguous. Host code reaches CPU data through data<T>(), which checks the dtype and that the
// tensor lives on the CPU (a host pointer into device memory is a bug that would otherwise only
// show as a crash); compute backends (core/backend) reach memory on any device through
// device_data<T>(), which checks the dtype only.
// Thread-safety: a Tensor is a value; copies share storage, and concurrent writes to shared
// storage need outside synchronisation (as for any buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace shardflow {

enum class DType : uint8_t { kFloat32, kFloat64, kUInt8, kInt32, kInt64 };
// A device's identity. What a device is (its backend, memory, staging, collectives) is its
// runtime, registered once (core/backend/device_runtime.hpp). kTest is reserved for a device a
// test registers (tests/core/device_runtime_test.cpp); no program registers it.
enum class Device : uint8_t { kCpu, kCuda, kTest };
// Every Device value: the device registry is indexed by it.
inline constexpr size_t kDevices = static_cast<size_t>(Device::kTest) + 1;

// Inline: called per feature per element on pipeline paths.
inline size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kUInt8:
      return 1;
  }
  return 0;
}
const char* DTypeName(DType dtype);     // "float32", "uint8", ...
const char* DeviceName(Device device);  // "cpu", "cuda", "test"
// "float32" | "float64" | "uint8" | "int32" | "int64"; throws Error(kInvalidArgument).
DType ParseDType(const std::string& name);

template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType DTypeOf<double>() {
  return DType::kFloat64;
}
template <>
constexpr DType DTypeOf<uint8_t>() {
  return DType::kUInt8;
}
template <>
constexpr DType DTypeOf<int32_t>() {
  return DType::kInt32;
}
template <>
constexpr DType DTypeOf<int64_t>() {
  return DType::kInt64;
}

using Shape = std::vector<int64_t>;
// 1 for a scalar (empty shape). Inline: called per element on pipeline and layer paths.
inline int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}
std::string ShapeToString(const Shape& shape);  // "[128,28,28,1]"

// How a device other than the CPU allocates and copies memory. A device's runtime carries one
// (DeviceRuntime::memory, core/backend/device_runtime.hpp); Tensor uses it for tensors on that
// device. Copies are synchronous: when they return, the destination holds the data.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual void* Allocate(size_t bytes) = 0;  // throws Error on failure
  virtual void Free(void* p) = 0;            // must not throw: tensors free in destructors
  virtual void Zero(void* p, size_t bytes) = 0;
  virtual void CopyToDevice(void* dst, const void* host_src, size_t bytes) = 0;
  virtual void CopyToHost(void* host_dst, const void* src, size_t bytes) = 0;
  virtual void CopyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  // The most bytes this memory held at once so far (a GPU's pool: tensors and scratch); 0 when
  // it does not track them.
  virtual size_t PeakBytes() const { return 0; }
};
// The memory of `device`'s registered runtime (core/backend/device_runtime.cpp). Throws
// Error(kInternal) naming the device when it has none (the CPU, or no runtime registered).
DeviceMemory& DeviceMemoryFor(Device device);

class Tensor {
 public:
  Tensor() = default;  // empty: dtype float32, shape [0], no storage
  // Owning, zero-filled CPU tensor.
  Tensor(DType dtype, Shape shape);
  // Owning CPU tensor whose bytes are unspecified (not zero-filled): for outputs the caller
  // writes whole.
  static Tensor ForOverwrite(DType dtype, Shape shape);
  // Owning, zero-filled tensor on `device` (its runtime's DeviceMemory unless kCpu).
  Tensor(DType dtype, Shape shape, Device device);
  // Non-owning view of `data`. REQUIRES: data holds NumElements(shape) elements of dtype.
  static Tensor View(void* data, DType dtype, Shape shape, Device device = Device::kCpu);
  // A CPU tensor over `data`, kept alive by `storage` (whose deleter frees or recycles it);
  // its bytes are as `data` holds them (not zero-filled). REQUIRES: data 64-byte aligned,
  // holding NumElements(shape) elements of dtype for as long as `storage` lives.
  static Tensor Adopt(std::shared_ptr<void> storage, void* data, DType dtype, Shape shape);

  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  size_t rank() const { return shape_.size(); }
  int64_t num_elements() const { return NumElements(shape_); }
  size_t byte_size() const { return static_cast<size_t>(num_elements()) * DTypeSize(dtype_); }
  bool owns_storage() const { return storage_ != nullptr; }
  // Whether no other tensor (copy, slice, reshape) shares this one's storage: then writing
  // into it in place changes nobody else's data.
  bool sole_owner() const { return storage_ != nullptr && storage_.use_count() == 1; }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  // Typed host access; throws Error(kInternal) on a dtype mismatch or when the tensor is not
  // on the CPU (the message names the device).
  template <typename T>
  T* data() {
    CheckDType(DTypeOf<T>());
    if (device_ != Device::kCpu) ThrowNotHost();
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    CheckDType(DTypeOf<T>());
    if (device_ != Device::kCpu) ThrowNotHost();
    return static_cast<const T*>(data_);
  }
  // Typed access to memory on device(), for backends that run kernels there; throws
  // Error(kInternal) on a dtype mismatch. The pointer is only valid on that device.
  template <typename T>
  T* device_data() {
    CheckDType(DTypeOf<T>());
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* device_data() const {
    CheckDType(DTypeOf<T>());
    return static_cast<const T*>(data_);
  }

  // Same storage, new shape with the same number of elements; throws otherwise.
  Tensor Reshaped(Shape shape) const;
  // Rows [begin, end) of the first dimension, sharing storage.
  Tensor Slice(int64_t begin, int64_t end) const;
  // A deep copy with its own storage.
  Tensor Clone() const;
  // A copy on `device` (this tensor itself, sharing storage, when it is already there).
  Tensor To(Device device) const;

 private:
  enum class Fill { kZero, kNone };
  Tensor(DType dtype, Shape shape, Fill fill);
  void CheckDType(DType want) const;
  [[noreturn]] void ThrowNotHost() const;

  DType dtype_ = DType::kFloat32;
  Device device_ = Device::kCpu;
  Shape shape_ = {0};
  std::shared_ptr<void> storage_;  // null for views
  void* data_ = nullptr;
};

// Element i of an integer tensor (uint8, int32 or int64; labels) as int64. CPU tensors only;
// throws Error(kInvalidArgument) naming the dtype for a float tensor.
inline int64_t LabelAt(const Tensor& labels, int64_t i) {
  switch (labels.dtype()) {
    case DType::kInt32:
      return labels.data<int32_t>()[i];
    case DType::kInt64:
      return labels.data<int64_t>()[i];
    case DType::kUInt8:
      return labels.data<uint8_t>()[i];
    default:
      throw Error(
          ErrorCode::kInvalidArgument,
          std::string("labels must be an integer tensor, got ") + DTypeName(labels.dtype()));
  }
}

}  // namespace shardflow
