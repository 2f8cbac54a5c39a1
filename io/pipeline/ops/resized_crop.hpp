// Inception-style crops as map functions: random_resized_crop (training) and center_crop
// (evaluation), each a window of the image resized bilinearly to height x width (float32 out,
// as Resize). Both take the image feature either decoded (uint8 [h, w, c]) or still encoded
// (uint8 [n], JPEG or PNG bytes): a JPEG's window is chosen from its header's size (the same
// random draws, so the same window as on the decoded image) and only that window is decoded
// (ops/jpeg_window.hpp), downscaled in the DCT domain by 1/2, 1/4 or 1/8 when the window is at
// least that many times the output size (JpegScaleFor; dct_scaling = false turns it off). PNG
// bytes are decoded whole, then cropped. With scale 1 the fused result equals decode, crop and
// resize exactly; with DCT scaling it is an area-averaged (less aliased) version of it (bounds
// measured in tests/io/jpeg_window_test.cpp).
//
// Random windows draw from CounterRng(seed, epoch, element id, kResizedCropStream): the same
// element in the same epoch gets the same window on any thread, rank count or call order.
// Errors: a wrong rank or dtype is Error(kInvalidArgument), a corrupt image Error(kDataLoss),
// both naming the feature; the map stage adds file and record.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "io/pipeline/counter_rng.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/ops/jpeg_window.hpp"

namespace shardflow::pipeline {

inline constexpr uint32_t kResizedCropStream = 0x52524350;  // "RRCP"

// torchvision's RandomResizedCrop ranges: area fraction [min_scale, max_scale] of the image and
// aspect ratio (width / height) [min_ratio, max_ratio], drawn log-uniformly.
struct ResizedCropRange {
  double min_scale = 0.08, max_scale = 1.0;
  double min_ratio = 3.0 / 4.0, max_ratio = 4.0 / 3.0;
};

// torchvision's RandomResizedCrop.get_params: up to 10 tries of area = U(min_scale, max_scale)
// * h * w and ratio = exp(U(log min_ratio, log max_ratio)), w' = round(sqrt(area * ratio)),
// h' = round(sqrt(area / ratio)), accepted when it fits, placed uniformly; else the centred
// window of the image's aspect ratio clamped to [min_ratio, max_ratio] (the whole image when
// within). REQUIRES: h, w >= 1; 0 < min_scale <= max_scale; 0 < min_ratio <= max_ratio.
ImageWindow RandomResizedCropWindow(int64_t h, int64_t w, const ResizedCropRange& range,
                                    CounterRng& rng);

// The centred window of aspect out_height : out_width as large as fits the h x w image, scaled
// by `fraction` (timm's crop_pct, 0.875 by default: for a square output, `fraction` of the
// shorter side); sides rounded, at least 1; top/left = floor((h - height) / 2), likewise.
ImageWindow CenterCropWindow(int64_t h, int64_t w, int64_t out_height, int64_t out_width,
                             double fraction);

// The window `choose(h, w)` of `image` resized to height x width: float32 [height, width, c].
// image: uint8 [h, w, c] decoded, or uint8 [n] JPEG/PNG bytes, decoded with `channels` as
// DecodeImageBytes (a JPEG: its header, then only the window). Errors name no feature: a
// corrupt image is Error(kDataLoss), a bad tensor or window Error(kInvalidArgument).
using WindowChooser = std::function<ImageWindow(int64_t h, int64_t w)>;
Tensor CropAndResize(const Tensor& image, int64_t height, int64_t width,
                     const WindowChooser& choose, int channels = 0, bool dct_scaling = true);

// The map functions. REQUIRES (else Error(kInvalidArgument) naming the feature): height, width
// >= 1; valid ranges; 0 < fraction <= 1. channels: what encoded bytes decode to (0, 1, 3).
MapFn RandomResizedCrop(std::string feature, int64_t height, int64_t width, ResizedCropRange range,
                        uint64_t seed, int channels = 0, bool dct_scaling = true);
MapFn CenterCrop(std::string feature, int64_t height, int64_t width, double fraction = 0.875,
                 int channels = 0, bool dct_scaling = true);

}  // namespace shardflow::pipeline
