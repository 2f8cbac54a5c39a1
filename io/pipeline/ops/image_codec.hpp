// Image codecs: JPEG (libjpeg-turbo) and PNG (libpng) to and from uint8 [height, width,
// channels] tensors, and the DecodeImage map function.
//
// Decoding a corrupt or truncated image throws Error(kDataLoss) with the codec's own message;
// DecodeImage adds the feature name, and the map stage adds the file, record and stage.
// Thread-safety: all functions are reentrant (no global codec state).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.hpp"
#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {

// channels: 0 = as stored (1 or 3 for JPEG; 1-4 for PNG), 1 = grey, 3 = RGB.
Tensor DecodeJpeg(const uint8_t* data, size_t size, int channels = 0);
Tensor DecodePng(const uint8_t* data, size_t size, int channels = 0);
// By signature: JPEG (FF D8 FF) or PNG (89 'P' 'N' 'G'); otherwise Error(kInvalidArgument).
Tensor DecodeImageBytes(const uint8_t* data, size_t size, int channels = 0);

// REQUIRES: image is uint8 [h, w, c] with c in {1, 3}; quality 1..100.
std::string EncodeJpeg(const Tensor& image, int quality = 90);
// REQUIRES: image is uint8 [h, w, c] with c in {1, 2, 3, 4}.
std::string EncodePng(const Tensor& image);

// Replaces feature `feature` (uint8 bytes) with the decoded uint8 [h, w, c] image (stored
// under `out`, default the same name).
MapFn DecodeImage(std::string feature, int channels = 0, std::string out = "");

}  // namespace shardflow::pipeline
