// Image augmentations as map functions on [h, w, c] tensors (any dtype unless stated).
//
// Random ops draw from CounterRng(seed, epoch, element id, stream): the same element in the
// same epoch gets the same crop/flip on any thread, in any order (docs/design.md decision 5), and a
// new one next epoch. Each op uses its own stream so ops stay independent.
// Errors (wrong rank, crop larger than the image) are Error(kInvalidArgument) naming the
// feature; the map stage adds file, record and stage.
#pragma once

#include <string>
#include <vector>

#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {

// A uniformly placed height x width window.
MapFn RandomCrop(std::string feature, int64_t height, int64_t width, uint64_t seed);
// Mirrors columns with probability 1/2.
MapFn RandomFlipLeftRight(std::string feature, uint64_t seed);
// Bilinear resize to height x width (half-pixel centres, like tf.image.resize); float32 out.
MapFn Resize(std::string feature, int64_t height, int64_t width);
// (x - mean[c]) / std[c] per channel (last dimension); float32 out. mean/std of size 1 apply
// to every channel.
MapFn Normalize(std::string feature, std::vector<float> mean, std::vector<float> stddev);

// The pure functions behind the ops (tests compare them to naive twins).
Tensor CropImage(const Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width);
Tensor FlipLeftRight(const Tensor& image);
Tensor ResizeBilinear(const Tensor& image, int64_t height, int64_t width);
// ResizeBilinear of the region [top, top + region_height) x [left, left + region_width) of
// `image` (fractional pixels; samples clamped to the image): with the region the whole image it
// is ResizeBilinear exactly. The fused decode-and-crop resizes a DCT-downscaled window by it.
Tensor ResizeBilinearRegion(const Tensor& image, double top, double left, double region_height,
                            double region_width, int64_t height, int64_t width);

}  // namespace shardflow::pipeline
