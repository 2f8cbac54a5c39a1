#include "io/pipeline/ops/resized_crop.hpp"

#include <algorithm>
#include <cmath>

#include "io/pipeline/ops/image_augment.hpp"
#include "io/pipeline/ops/image_codec.hpp"

namespace shardflow::pipeline {
namespace {

// Python's round() (half to even), as torchvision's get_params rounds.
int64_t RoundHalfEven(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

void CheckWindow(const ImageWindow& win, int64_t h, int64_t w) {
  if (win.height < 1 || win.width < 1 || win.top < 0 || win.left < 0 || win.top + win.height > h ||
      win.left + win.width > w) {
    throw Error(ErrorCode::kInternal,
                "crop window [" + std::to_string(win.top) + ", " + std::to_string(win.left) + ", " +
                    std::to_string(win.height) + ", " + std::to_string(win.width) +
                    "] outside the " + std::to_string(h) + "x" + std::to_string(w) + " image");
  }
}

bool IsJpeg(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

// JPEG bytes: the header's size, the window, only the window decoded (DCT-downscaled by s when
// allowed), then resized. With s > 1 the decoded pixels cover ScaledWindow(...), and the window
// sits at fractional offsets in it: scaled pixel i spans original pixels [i*s, (i+1)*s).
Tensor JpegCropAndResize(const Tensor& bytes, int64_t height, int64_t width,
                         const WindowChooser& choose, int channels, bool dct_scaling) {
  const uint8_t* data = bytes.data<uint8_t>();
  const size_t size = bytes.byte_size();
  const JpegHeader header = ReadJpegHeader(data, size);
  const ImageWindow win = choose(header.height, header.width);
  CheckWindow(win, header.height, header.width);
  const int s = dct_scaling ? JpegScaleFor(win, height, width) : 1;
  const Tensor part = DecodeJpegWindow(data, size, win, channels, s);
  if (s == 1) return ResizeBilinear(part, height, width);
  const ImageWindow sw = ScaledWindow(win, header.height, header.width, s);
  const double inv = 1.0 / s;
  return ResizeBilinearRegion(part, win.top * inv - static_cast<double>(sw.top),
                              win.left * inv - static_cast<double>(sw.left), win.height * inv,
                              win.width * inv, height, width);
}

// Rethrows `err` of op `op` naming the feature.
[[noreturn]] void Rethrow(const Error& err, const char* op, const std::string& feature) {
  ErrorContext ctx = err.context();
  ctx.key = feature;
  throw Error(err.code(),
              std::string(op) + ": feature '" + feature + "': " + err.status().message(), ctx);
}

void CheckSize(const char* op, const std::string& feature, int64_t height, int64_t width,
               int channels) {
  if (height < 1 || width < 1) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": size must be >= 1",
                {.key = feature});
  }
  if (channels != 0 && channels != 1 && channels != 3) {
    throw Error(ErrorCode::kInvalidArgument, std::string(op) + ": channels must be 0, 1 or 3",
                {.key = feature});
  }
}

}  // namespace

ImageWindow RandomResizedCropWindow(int64_t h, int64_t w, const ResizedCropRange& r,
                                    CounterRng& rng) {
  const double area = static_cast<double>(h) * static_cast<double>(w);
  const double log_min = std::log(r.min_ratio), log_max = std::log(r.max_ratio);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * (r.min_scale + (r.max_scale - r.min_scale) * rng.Uniform());
    const double ratio = std::exp(log_min + (log_max - log_min) * rng.Uniform());
    const int64_t cw = RoundHalfEven(std::sqrt(target * ratio));
    const int64_t ch = RoundHalfEven(std::sqrt(target / ratio));
    if (cw > 0 && cw <= w && ch > 0 && ch <= h) {
      const auto top = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(h - ch + 1)));
      const auto left = static_cast<int64_t>(rng.UniformInt(static_cast<uint64_t>(w - cw + 1)));
      return {.top = top, .left = left, .height = ch, .width = cw};
    }
  }
  // Fallback: the centred window of the image's ratio clamped to the range.
  const double in_ratio = static_cast<double>(w) / static_cast<double>(h);
  int64_t cw = w, ch = h;
  if (in_ratio < r.min_ratio) {
    ch = RoundHalfEven(static_cast<double>(w) / r.min_ratio);
  } else if (in_ratio > r.max_ratio) {
    cw = RoundHalfEven(static_cast<double>(h) * r.max_ratio);
  }
  ch = std::clamp<int64_t>(ch, 1, h);
  cw = std::clamp<int64_t>(cw, 1, w);
  return {.top = (h - ch) / 2, .left = (w - cw) / 2, .height = ch, .width = cw};
}

ImageWindow CenterCropWindow(int64_t h, int64_t w, int64_t out_height, int64_t out_width,
                             double fraction) {
  const double k = fraction * std::min(static_cast<double>(h) / static_cast<double>(out_height),
                                       static_cast<double>(w) / static_cast<double>(out_width));
  const int64_t ch = std::clamp<int64_t>(RoundHalfEven(k * out_height), 1, h);
  const int64_t cw = std::clamp<int64_t>(RoundHalfEven(k * out_width), 1, w);
  return {.top = (h - ch) / 2, .left = (w - cw) / 2, .height = ch, .width = cw};
}

Tensor CropAndResize(const Tensor& image, int64_t height, int64_t width,
                     const WindowChooser& choose, int channels, bool dct_scaling) {
  if (image.rank() == 1 && image.dtype() == DType::kUInt8) {
    const uint8_t* data = image.data<uint8_t>();
    if (IsJpeg(data, image.byte_size())) {
      return JpegCropAndResize(image, height, width, choose, channels, dct_scaling);
    }
    const Tensor decoded = DecodeImageBytes(data, image.byte_size(), channels);
    return CropAndResize(decoded, height, width, choose, channels, dct_scaling);
  }
  if (image.rank() != 3 || image.dim(0) < 1 || image.dim(1) < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "need a non-empty [h,w,c] image or uint8 [n] encoded bytes, got " +
                    std::string(DTypeName(image.dtype())) + ShapeToString(image.shape()));
  }
  const ImageWindow win = choose(image.dim(0), image.dim(1));
  CheckWindow(win, image.dim(0), image.dim(1));
  return ResizeBilinear(CropImage(image, win.top, win.left, win.height, win.width), height, width);
}

MapFn RandomResizedCrop(std::string feature, int64_t height, int64_t width, ResizedCropRange range,
                        uint64_t seed, int channels, bool dct_scaling) {
  CheckSize("random_resized_crop", feature, height, width, channels);
  if (!(range.min_scale > 0 && range.min_scale <= range.max_scale && range.min_ratio > 0 &&
        range.min_ratio <= range.max_ratio)) {
    throw Error(ErrorCode::kInvalidArgument,
                "random_resized_crop: need 0 < min_scale <= max_scale, 0 < min_ratio <= max_ratio",
                {.key = feature});
  }
  return [=](Element& e, const MapContext& ctx) {
    CounterRng rng(seed, static_cast<uint64_t>(ctx.epoch), static_cast<uint64_t>(e.id),
                   kResizedCropStream);
    const WindowChooser choose = [&](int64_t h, int64_t w) {
      return RandomResizedCropWindow(h, w, range, rng);
    };
    try {
      e.Set(feature, CropAndResize(e.Get(feature), height, width, choose, channels, dct_scaling));
    } catch (const Error& err) {
      Rethrow(err, "random_resized_crop", feature);
    }
  };
}

MapFn CenterCrop(std::string feature, int64_t height, int64_t width, double fraction, int channels,
                 bool dct_scaling) {
  CheckSize("center_crop", feature, height, width, channels);
  if (!(fraction > 0 && fraction <= 1)) {
    throw Error(ErrorCode::kInvalidArgument, "center_crop: fraction must be in (0, 1]",
                {.key = feature});
  }
  return [=](Element& e, const MapContext&) {
    const WindowChooser choose = [&](int64_t h, int64_t w) {
      return CenterCropWindow(h, w, height, width, fraction);
    };
    try {
      e.Set(feature, CropAndResize(e.Get(feature), height, width, choose, channels, dct_scaling));
    } catch (const Error& err) {
      Rethrow(err, "center_crop", feature);
    }
  };
}

}  // namespace shardflow::pipeline
