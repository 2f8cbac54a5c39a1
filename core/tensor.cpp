#include "core/tensor.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

namespace shardflow {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
  }
  return "?";
}

const char* DeviceName(Device device) {
  switch (device) {
    case Device::kCpu:
      return "cpu";
    case Device::kCuda:
      return "cuda";
    case Device::kTest:
      return "test";
  }
  return "?";
}

DType ParseDType(const std::string& name) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kUInt8, DType::kInt32, DType::kInt64}) {
    if (name == DTypeName(d)) return d;
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown dtype '" + name + "'",
              {.hint = "use float32, float64, uint8, int32 or int64"});
}

std::string ShapeToString(const Shape& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  out << ']';
  return out.str();
}

Tensor::Tensor(DType dtype, Shape shape) : Tensor(dtype, std::move(shape), Fill::kZero) {}

Tensor Tensor::ForOverwrite(DType dtype, Shape shape) {
  return Tensor(dtype, std::move(shape), Fill::kNone);
}

Tensor::Tensor(DType dtype, Shape shape, Fill fill) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_) {
    if (d < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "negative dimension in shape " + ShapeToString(shape_));
    }
  }
  // 64-byte alignment for vector kernels; at least one byte so data_ is never null.
  // One allocation holds the reference count and the (zero-filled) bytes, over-allocated by
  // 63 and aligned by hand rather than with an aligned allocator: glibc's memalign asks the
  // heap for size + alignment + header, so a freed tensor's chunk can never satisfy the next
  // tensor of the same size, and a steady stream of allocate/free in random order (a shuffle
  // buffer) fragments the heap to ~1.8x its live bytes. A plain allocation of a fixed size
  // reuses freed chunks exactly. One allocation instead of two (bytes, then the count) halves
  // the allocator calls of the pipeline's per-record scalars.
  const size_t bytes = (std::max<size_t>(byte_size(), 1) + 63) / 64 * 64;
  std::shared_ptr<unsigned char[]> block;
  try {
    block = fill == Fill::kZero ? std::make_shared<unsigned char[]>(bytes + 63)
                                : std::make_shared_for_overwrite<unsigned char[]>(bytes + 63);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::kInternal, "out of memory allocating " + std::to_string(bytes) +
                                          " bytes for tensor " + ShapeToString(shape_));
  }
  data_ = reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(block.get()) + 63) & ~uintptr_t{63});
  storage_ = std::move(block);
}

Tensor::Tensor(DType dtype, Shape shape, Device device) {
  if (device == Device::kCpu) {
    *this = Tensor(dtype, std::move(shape));
    return;
  }
  Tensor shaped = View(nullptr, dtype, std::move(shape), device);  // checks nothing yet
  for (int64_t d : shaped.shape_) {
    if (d < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "negative dimension in shape " + ShapeToString(shaped.shape_));
    }
  }
  DeviceMemory& mem = DeviceMemoryFor(device);
  const size_t bytes = std::max<size_t>(shaped.byte_size(), 1);
  void* p = mem.Allocate(bytes);
  mem.Zero(p, bytes);
  *this = std::move(shaped);
  storage_ = std::shared_ptr<void>(p, [m = &mem](void* q) { m->Free(q); });
  data_ = p;
}

Tensor Tensor::To(Device device) const {
  if (device == device_) return *this;
  Tensor out(dtype_, shape_, device);
  if (byte_size() == 0) return out;
  if (device_ == Device::kCpu) {
    DeviceMemoryFor(device).CopyToDevice(out.data_, data_, byte_size());
  } else if (device == Device::kCpu) {
    DeviceMemoryFor(device_).CopyToHost(out.data_, data_, byte_size());
  } else {
    throw Error(ErrorCode::kInternal,
                std::string("no copy from ") + DeviceName(device_) + " to " + DeviceName(device));
  }
  return out;
}

Tensor Tensor::View(void* data, DType dtype, Shape shape, Device device) {
  Tensor t;
  t.dtype_ = dtype;
  t.device_ = device;
  t.shape_ = std::move(shape);
  t.data_ = data;
  return t;
}

Tensor Tensor::Adopt(std::shared_ptr<void> storage, void* data, DType dtype, Shape shape) {
  Tensor t = View(data, dtype, std::move(shape));
  t.storage_ = std::move(storage);
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  if (NumElements(shape) != num_elements()) {
    throw Error(ErrorCode::kInvalidArgument,
                "cannot reshape " + ShapeToString(shape_) + " to " + ShapeToString(shape));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::Slice(int64_t begin, int64_t end) const {
  if (shape_.empty() || begin < 0 || end < begin || end > shape_[0]) {
    throw Error(ErrorCode::kInvalidArgument, "slice [" + std::to_string(begin) + "," +
                                                 std::to_string(end) + ") out of range for " +
                                                 ShapeToString(shape_));
  }
  Tensor t = *this;
  const int64_t row = shape_[0] == 0 ? 0 : num_elements() / shape_[0];
  t.shape_[0] = end - begin;
  t.data_ = static_cast<char*>(data_) + begin * row * static_cast<int64_t>(DTypeSize(dtype_));
  return t;
}

Tensor Tensor::Clone() const {
  Tensor t(dtype_, shape_, device_);
  if (byte_size() == 0) return t;
  if (device_ == Device::kCpu) {
    std::memcpy(t.data_, data_, byte_size());
  } else {
    DeviceMemoryFor(device_).CopyOnDevice(t.data_, data_, byte_size());
  }
  return t;
}

void Tensor::CheckDType(DType want) const {
  if (want != dtype_) {
    throw Error(ErrorCode::kInternal, std::string("tensor of dtype ") + DTypeName(dtype_) +
                                          " accessed as " + DTypeName(want));
  }
}

void Tensor::ThrowNotHost() const {
  throw Error(ErrorCode::kInternal, std::string("host pointer asked of a tensor ") +
                                        ShapeToString(shape_) + " on device " +
                                        DeviceName(device_) + " (backends use device_data<T>())");
}

}  // namespace shardflow
