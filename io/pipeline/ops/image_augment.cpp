#include "io/pipeline/ops/image_augment.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "io/pipeline/counter_rng.hpp"
#include "io/pipeline/ops/tensor_ops.hpp"

namespace shardflow::pipeline {
namespace {

constexpr uint32_t kCropStream = 0x43524f50, kFlipStream = 0x464c4950;

void CheckHwc(const Tensor& t, const std::string& feature, const char* op) {
  if (t.rank() != 3) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(op) + ": feature '" + feature + "' must be [h,w,c], got " +
                    ShapeToString(t.shape()),
                {.key = feature});
  }
}

// (x - mean[k]) / stddev[k] in double, rounded to float, for channel k = i % c: the
// arithmetic of the generic path below, typed. uint8 inputs take a table of the 256 values
// per channel (the same numbers, computed once per element instead of per value).
void NormalizeFloat(const float* x, int64_t n, const std::vector<float>& mean,
                    const std::vector<float>& stddev, float* dst) {
  const size_t c = mean.size();
  for (int64_t i = 0; i < n; i += static_cast<int64_t>(c)) {
    for (size_t k = 0; k < c; ++k) {
      dst[i + static_cast<int64_t>(k)] = static_cast<float>(
          (static_cast<double>(x[i + static_cast<int64_t>(k)]) - mean[k]) / stddev[k]);
    }
  }
}

void NormalizeBytes(const uint8_t* x, int64_t n, const std::vector<float>& mean,
                    const std::vector<float>& stddev, float* dst) {
  const size_t c = mean.size();
  std::vector<float> table(256 * c);
  for (size_t k = 0; k < c; ++k) {
    for (int v = 0; v < 256; ++v) {
      table[k * 256 + static_cast<size_t>(v)] =
          static_cast<float>((static_cast<double>(v) - mean[k]) / stddev[k]);
    }
  }
  for (int64_t i = 0; i < n; i += static_cast<int64_t>(c)) {
    for (size_t k = 0; k < c; ++k) {
      dst[i + static_cast<int64_t>(k)] = table[k * 256 + x[i + static_cast<int64_t>(k)]];
    }
  }
}

}  // namespace

Tensor CropImage(const Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width) {
  const int64_t w = image.dim(1), c = image.dim(2);
  Tensor out(image.dtype(), {height, width, c});
  const size_t elem = DTypeSize(image.dtype());
  const size_t row = static_cast<size_t>(width * c) * elem;
  for (int64_t y = 0; y < height; ++y) {
    std::memcpy(static_cast<char*>(out.raw_data()) + y * row,
                static_cast<const char*>(image.raw_data()) + ((top + y) * w + left) * c * elem,
                row);
  }
  return out;
}

Tensor FlipLeftRight(const Tensor& image) {
  const int64_t h = image.dim(0), w = image.dim(1), c = image.dim(2);
  Tensor out = Tensor::ForOverwrite(image.dtype(), image.shape());
  const size_t px = static_cast<size_t>(c) * DTypeSize(image.dtype());
  const char* in = static_cast<const char*>(image.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t y = 0; y < h; ++y) {
    for (int64_t x = 0; x < w; ++x) {
      std::memcpy(dst + (y * w + x) * px, in + (y * w + (w - 1 - x)) * px, px);
    }
  }
  return out;
}

Tensor ResizeBilinear(const Tensor& image, int64_t height, int64_t width) {
  return ResizeBilinearRegion(image, 0.0, 0.0, static_cast<double>(image.dim(0)),
                              static_cast<double>(image.dim(1)), height, width);
}

namespace {

// ResizeBilinearRegion's loop for uint8 images (decoded JPEGs, the input pipeline's case): the
// same arithmetic in the same order, so the same bits, with each column's neighbours and weight
// computed once instead of per pixel and channel, and no per-element dtype dispatch (about 5x
// faster at 224x224x3).
void ResizeBytes(const uint8_t* src, int64_t h, int64_t w, int64_t c, double top, double left,
                 double sy, double sx, int64_t height, int64_t width, float* dst) {
  std::vector<int64_t> x0s(static_cast<size_t>(width)), x1s(x0s.size());
  std::vector<double> wxs(x0s.size());
  for (int64_t x = 0; x < width; ++x) {
    const double fx = std::clamp(left + (x + 0.5) * sx - 0.5, 0.0, static_cast<double>(w - 1));
    x0s[x] = static_cast<int64_t>(fx);
    x1s[x] = std::min(x0s[x] + 1, w - 1);
    wxs[x] = fx - x0s[x];
  }
  for (int64_t y = 0; y < height; ++y) {
    const double fy = std::clamp(top + (y + 0.5) * sy - 0.5, 0.0, static_cast<double>(h - 1));
    const int64_t y0 = static_cast<int64_t>(fy), y1 = std::min(y0 + 1, h - 1);
    const double wy = fy - y0;
    const uint8_t* r0 = src + y0 * w * c;
    const uint8_t* r1 = src + y1 * w * c;
    for (int64_t x = 0; x < width; ++x) {
      const uint8_t *a = r0 + x0s[x] * c, *b = r0 + x1s[x] * c;
      const uint8_t *d = r1 + x0s[x] * c, *f = r1 + x1s[x] * c;
      const double wx = wxs[x];
      for (int64_t k = 0; k < c; ++k) {
        const double upper = a[k] + (static_cast<double>(b[k]) - a[k]) * wx;
        const double lower = d[k] + (static_cast<double>(f[k]) - d[k]) * wx;
        dst[(y * width + x) * c + k] = static_cast<float>(upper + (lower - upper) * wy);
      }
    }
  }
}

}  // namespace

Tensor ResizeBilinearRegion(const Tensor& image, double top, double left, double region_height,
                            double region_width, int64_t height, int64_t width) {
  // Half-pixel centres: output pixel (y, x) samples input (top + (y + .5) * sy - .5, ...) with
  // sy = region_height / height, clamped to the image; each output is the weighted mean of the
  // four neighbours.
  const int64_t h = image.dim(0), w = image.dim(1), c = image.dim(2);
  Tensor out = Tensor::ForOverwrite(DType::kFloat32, {height, width, c});  // every value set
  const double sy = region_height / height, sx = region_width / width;
  float* dst = out.data<float>();
  if (image.dtype() == DType::kUInt8) {
    ResizeBytes(image.data<uint8_t>(), h, w, c, top, left, sy, sx, height, width, dst);
    return out;
  }
  for (int64_t y = 0; y < height; ++y) {
    const double fy = std::clamp(top + (y + 0.5) * sy - 0.5, 0.0, static_cast<double>(h - 1));
    const int64_t y0 = static_cast<int64_t>(fy), y1 = std::min(y0 + 1, h - 1);
    const double wy = fy - y0;
    for (int64_t x = 0; x < width; ++x) {
      const double fx = std::clamp(left + (x + 0.5) * sx - 0.5, 0.0, static_cast<double>(w - 1));
      const int64_t x0 = static_cast<int64_t>(fx), x1 = std::min(x0 + 1, w - 1);
      const double wx = fx - x0;
      for (int64_t k = 0; k < c; ++k) {
        const double a = ReadAsDouble(image, (y0 * w + x0) * c + k);
        const double b = ReadAsDouble(image, (y0 * w + x1) * c + k);
        const double d = ReadAsDouble(image, (y1 * w + x0) * c + k);
        const double f = ReadAsDouble(image, (y1 * w + x1) * c + k);
        const double upper = a + (b - a) * wx, lower = d + (f - d) * wx;
        dst[(y * width + x) * c + k] = static_cast<float>(upper + (lower - upper) * wy);
      }
    }
  }
  return out;
}

MapFn RandomCrop(std::string feature, int64_t height, int64_t width, uint64_t seed) {
  if (height < 1 || width < 1) {
    throw Error(ErrorCode::kInvalidArgument, "random_crop: size must be >= 1", {.key = feature});
  }
  return [=](Element& e, const MapContext& ctx) {
    const Tensor& image = e.Get(feature);
    CheckHwc(image, feature, "random_crop");
    if (image.dim(0) < height || image.dim(1) < width) {
      throw Error(ErrorCode::kInvalidArgument,
                  "random_crop: " + std::to_string(height) + "x" + std::to_string(width) +
                      " window does not fit image " + ShapeToString(image.shape()),
                  {.key = feature});
    }
    CounterRng rng(seed, static_cast<uint64_t>(ctx.epoch), static_cast<uint64_t>(e.id),
                   kCropStream);
    const int64_t top = static_cast<int64_t>(rng.UniformInt(image.dim(0) - height + 1));
    const int64_t left = static_cast<int64_t>(rng.UniformInt(image.dim(1) - width + 1));
    e.Set(feature, CropImage(image, top, left, height, width));
  };
}

MapFn RandomFlipLeftRight(std::string feature, uint64_t seed) {
  return [=](Element& e, const MapContext& ctx) {
    const Tensor& image = e.Get(feature);
    CheckHwc(image, feature, "random_flip");
    CounterRng rng(seed, static_cast<uint64_t>(ctx.epoch), static_cast<uint64_t>(e.id),
                   kFlipStream);
    if ((rng.NextU32() & 1u) == 0) return;
    if (!image.sole_owner()) {
      e.Set(feature, FlipLeftRight(image));
      return;
    }
    // Nobody else holds the pixels (the crop's fresh output): reverse each row in place.
    Tensor& pixels = e.Get(feature);
    const int64_t h = pixels.dim(0), w = pixels.dim(1);
    const size_t px = static_cast<size_t>(pixels.dim(2)) * DTypeSize(pixels.dtype());
    char* data = static_cast<char*>(pixels.raw_data());
    char tmp[64];
    if (px > sizeof(tmp)) {
      e.Set(feature, FlipLeftRight(image));
      return;
    }
    for (int64_t y = 0; y < h; ++y) {
      char* row = data + static_cast<size_t>(y * w) * px;
      for (int64_t a = 0, b = w - 1; a < b; ++a, --b) {
        std::memcpy(tmp, row + a * px, px);
        std::memcpy(row + a * px, row + b * px, px);
        std::memcpy(row + b * px, tmp, px);
      }
    }
  };
}

MapFn Resize(std::string feature, int64_t height, int64_t width) {
  if (height < 1 || width < 1) {
    throw Error(ErrorCode::kInvalidArgument, "resize: size must be >= 1", {.key = feature});
  }
  return [=](Element& e, const MapContext&) {
    const Tensor& image = e.Get(feature);
    CheckHwc(image, feature, "resize");
    if (image.dim(0) < 1 || image.dim(1) < 1) {
      throw Error(ErrorCode::kInvalidArgument, "resize: empty image", {.key = feature});
    }
    e.Set(feature, ResizeBilinear(image, height, width));
  };
}

MapFn Normalize(std::string feature, std::vector<float> mean, std::vector<float> stddev) {
  if (mean.empty() || mean.size() != stddev.size()) {
    throw Error(ErrorCode::kInvalidArgument, "normalize: need as many means as stddevs",
                {.key = feature});
  }
  for (float s : stddev) {
    if (!(s > 0)) {
      throw Error(ErrorCode::kInvalidArgument, "normalize: stddev must be > 0", {.key = feature});
    }
  }
  return [=](Element& e, const MapContext&) {
    const Tensor& in = e.Get(feature);
    const int64_t c = in.rank() == 0 ? 1 : in.dim(in.rank() - 1);
    if (mean.size() != 1 && static_cast<int64_t>(mean.size()) != c) {
      throw Error(ErrorCode::kInvalidArgument,
                  "normalize: " + std::to_string(mean.size()) + " means for " + std::to_string(c) +
                      " channels",
                  {.key = feature});
    }
    const int64_t n = in.num_elements();
    // Per-channel statistics over whole pixels: the typed loops (the per-value dispatch of
    // ReadAsDouble cost a fifth of the ImageNet input pipeline's time).
    if (static_cast<int64_t>(mean.size()) == c && n % c == 0 && in.dtype() == DType::kFloat32 &&
        in.sole_owner()) {
      // Nobody else holds the values (the crop's fresh output): in place.
      Tensor& values = e.Get(feature);
      NormalizeFloat(values.data<float>(), n, mean, stddev, values.data<float>());
      return;
    }
    Tensor out = Tensor::ForOverwrite(DType::kFloat32, in.shape());  // every value set below
    float* dst = out.data<float>();
    if (static_cast<int64_t>(mean.size()) == c && n % c == 0) {
      if (in.dtype() == DType::kFloat32) {
        NormalizeFloat(in.data<float>(), n, mean, stddev, dst);
        e.Set(feature, std::move(out));
        return;
      }
      if (in.dtype() == DType::kUInt8) {
        NormalizeBytes(in.data<uint8_t>(), n, mean, stddev, dst);
        e.Set(feature, std::move(out));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = mean.size() == 1 ? 0 : static_cast<size_t>(i % c);
      dst[i] = static_cast<float>((ReadAsDouble(in, i) - mean[k]) / stddev[k]);
    }
    e.Set(feature, std::move(out));
  };
}

}  // namespace shardflow::pipeline
