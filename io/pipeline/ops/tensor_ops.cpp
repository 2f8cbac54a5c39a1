#include "io/pipeline/ops/tensor_ops.hpp"

#include <cmath>
#include <cstring>

namespace shardflow::pipeline {

double ReadAsDouble(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return t.data<float>()[i];
    case DType::kFloat64:
      return t.data<double>()[i];
    case DType::kUInt8:
      return t.data<uint8_t>()[i];
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
  }
  return 0;
}

void WriteFromDouble(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::kFloat32:
      t.data<float>()[i] = static_cast<float>(v);
      return;
    case DType::kFloat64:
      t.data<double>()[i] = v;
      return;
    case DType::kUInt8:  // saturate and round, like an image library would
      t.data<uint8_t>()[i] = static_cast<uint8_t>(std::lround(std::fmin(255.0, std::fmax(0.0, v))));
      return;
    case DType::kInt32:
      t.data<int32_t>()[i] = static_cast<int32_t>(std::llround(v));
      return;
    case DType::kInt64:
      t.data<int64_t>()[i] = static_cast<int64_t>(std::llround(v));
      return;
  }
}

MapFn DecodeRaw(std::string feature, DType dtype, Shape shape, std::string out) {
  if (out.empty()) out = feature;
  int inferred = 0;
  for (int64_t d : shape) {
    if (d == -1) ++inferred;
    if (d < -1) throw Error(ErrorCode::kInvalidArgument, "decode_raw: bad shape", {.key = feature});
  }
  if (inferred > 1) {
    throw Error(ErrorCode::kInvalidArgument, "decode_raw: at most one -1 dimension",
                {.key = feature});
  }
  return [=](Element& e, const MapContext&) {
    const Tensor& bytes = e.Get(feature);
    const size_t have = bytes.byte_size();
    Shape s = shape;
    int64_t known = 1;
    for (int64_t d : s) known *= d == -1 ? 1 : d;
    const size_t elem = DTypeSize(dtype);
    if (inferred == 1) {
      if (known == 0 || have % (known * elem) != 0) {
        throw Error(ErrorCode::kInvalidArgument,
                    "decode_raw: " + std::to_string(have) + " bytes do not divide into " +
                        DTypeName(dtype) + ShapeToString(shape),
                    {.key = feature});
      }
      for (auto& d : s) {
        if (d == -1) d = static_cast<int64_t>(have / (known * elem));
      }
    }
    Tensor t(dtype, s);
    if (t.byte_size() != have) {
      throw Error(ErrorCode::kInvalidArgument,
                  "decode_raw: feature '" + feature + "' has " + std::to_string(have) + " bytes, " +
                      DTypeName(dtype) + ShapeToString(s) + " needs " +
                      std::to_string(t.byte_size()),
                  {.key = feature});
    }
    if (have > 0) std::memcpy(t.raw_data(), bytes.raw_data(), have);
    e.Set(out, std::move(t));
  };
}

MapFn CastAndScale(std::string feature, DType dtype, double scale, double offset) {
  return [=](Element& e, const MapContext&) {
    const Tensor& in = e.Get(feature);
    Tensor out(dtype, in.shape());
    const int64_t n = in.num_elements();
    if (in.dtype() == DType::kUInt8 && dtype == DType::kFloat32) {
      // The common case (pixels to floats) without the per-element dtype switch.
      const uint8_t* src = in.data<uint8_t>();
      float* dst = out.data<float>();
      const float s = static_cast<float>(scale), o = static_cast<float>(offset);
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * s + o;
    } else {
      for (int64_t i = 0; i < n; ++i) WriteFromDouble(out, i, ReadAsDouble(in, i) * scale + offset);
    }
    e.Set(feature, std::move(out));
  };
}

MapFn OneHot(std::string feature, int64_t depth, std::string out) {
  if (depth < 1) throw Error(ErrorCode::kInvalidArgument, "one_hot: depth must be >= 1");
  if (out.empty()) out = feature;
  return [=](Element& e, const MapContext&) {
    const Tensor& labels = e.Get(feature);
    if (labels.dtype() == DType::kFloat32 || labels.dtype() == DType::kFloat64 ||
        labels.rank() > 1) {
      throw Error(ErrorCode::kInvalidArgument,
                  "one_hot: feature '" + feature + "' must be integer labels, scalar or [n]",
                  {.key = feature});
    }
    const int64_t n = labels.num_elements();
    Shape shape = labels.rank() == 0 ? Shape{depth} : Shape{n, depth};
    Tensor t(DType::kFloat32, shape);
    for (int64_t i = 0; i < n; ++i) {
      const double v = ReadAsDouble(labels, i);
      if (v < 0 || v >= static_cast<double>(depth)) {
        throw Error(ErrorCode::kInvalidArgument,
                    "one_hot: label " + std::to_string(static_cast<int64_t>(v)) + " outside [0, " +
                        std::to_string(depth) + ")",
                    {.key = feature});
      }
      t.data<float>()[i * depth + static_cast<int64_t>(v)] = 1.0f;
    }
    e.Set(out, std::move(t));
  };
}

MapFn SlidingWindows(std::string feature, int64_t size, int64_t shift, std::string out) {
  if (size < 1 || shift < 1) {
    throw Error(ErrorCode::kInvalidArgument, "windows: size and shift must be >= 1",
                {.key = feature});
  }
  if (out.empty()) out = feature;
  return [=](Element& e, const MapContext&) {
    const Tensor& series = e.Get(feature);
    if (series.rank() < 1) {
      throw Error(ErrorCode::kInvalidArgument, "windows: feature '" + feature + "' is a scalar",
                  {.key = feature});
    }
    const int64_t steps = series.dim(0);
    const int64_t count = steps < size ? 0 : (steps - size) / shift + 1;
    Shape shape = series.shape();
    shape[0] = size;
    shape.insert(shape.begin(), count);
    Tensor t(series.dtype(), shape);
    const size_t step_bytes = series.byte_size() / static_cast<size_t>(std::max<int64_t>(1, steps));
    for (int64_t w = 0; w < count; ++w) {
      std::memcpy(static_cast<char*>(t.raw_data()) + w * size * step_bytes,
                  static_cast<const char*>(series.raw_data()) + w * shift * step_bytes,
                  size * step_bytes);
    }
    e.Set(out, std::move(t));
  };
}

}  // namespace shardflow::pipeline
