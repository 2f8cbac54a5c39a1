#include "core/layers/layer.hpp"

#include "core/backend/device_runtime.hpp"

namespace shardflow {

int64_t CheckInput(const Tensor& x, const Shape& expected, const std::string& layer) {
  const Shape& s = x.shape();
  bool ok = s.size() == expected.size() + 1;
  for (size_t i = 0; ok && i < expected.size(); ++i) ok = s[i + 1] == expected[i];
  if (!ok) {
    throw Error(ErrorCode::kInvalidArgument,
                layer + " expects input (batch," + ShapeToString(expected).substr(1) + " but got " +
                    ShapeToString(s),
                {.key = layer});
  }
  return s[0];
}

int64_t CheckSequenceInput(const Tensor& x, const Shape& expected, const std::string& layer,
                           size_t sequence_rank) {
  const Shape& s = x.shape();
  if (expected.size() < sequence_rank || s.size() != expected.size() + 1 || s[1] < 1 ||
      s[1] > expected[0]) {
    return CheckInput(x, expected, layer);
  }
  for (size_t i = 1; i < expected.size(); ++i) {
    if (s[i + 1] != expected[i]) return CheckInput(x, expected, layer);
  }
  return s[0];
}

void CheckHostTensor(const Tensor& t, const char* layer) {
  if (!DeviceSupports(t.device(), DeviceFeature::kHostMemory)) {
    throw Error(ErrorCode::kInvalidArgument, std::string(layer) + " runs on CPU tensors only",
                {.key = "model"});
  }
}

}  // namespace shardflow
