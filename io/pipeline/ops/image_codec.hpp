// Image codecs: JPEG (libjpeg-turbo) and PNG (libpng) to and from uint8 [height, width,
// channels] tensors, and the DecodeImage map function.
//
// Decoding a corrupt or truncated image throws Error(kDataLoss) with the codec's own message
// (libjpeg's warnings, such as "premature end of data", count as corrupt data); DecodeImage adds
// the feature name, and the map stage adds the file, record and stage.
//
// Decoded pixels follow TensorFlow's decode_png / decode_jpeg with dtype uint8, as the fixtures
// of tests/fixtures/images check: a palette PNG is RGB (RGBA with a tRNS chunk), 16-bit samples
// become their high byte (v >> 8, linear, no gamma), and no gamma is applied anywhere. Asking for
// other channels: alpha is dropped (or added as 255), grey is replicated to RGB, and RGB becomes
// grey by tf.image.rgb_to_grayscale's formula for PNG and JPEG alike: float32
// x = v/255, g = 0.2989 r + 0.5870 g + 0.1140 b, grey = uint8(g * 255.5). A CMYK (or YCCK)
// JPEG is 4 channels as stored; asked for RGB or grey it is converted to RGB first (with
// Adobe's marker: inverted inks, R = C*K/255; ops/jpeg_color.hpp), where libjpeg alone refuses.
// Thread-safety: all functions are reentrant (no global codec state).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.hpp"
#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {

// channels: 0 = as stored (JPEG: 1 or 3; PNG: 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA), 1 = grey,
// 3 = RGB; PNG also 2 = grey+alpha, 4 = RGBA.
Tensor DecodeJpeg(const uint8_t* data, size_t size, int channels = 0);
Tensor DecodePng(const uint8_t* data, size_t size, int channels = 0);
// By signature: JPEG (FF D8 FF) or PNG (89 'P' 'N' 'G'); otherwise Error(kInvalidArgument).
Tensor DecodeImageBytes(const uint8_t* data, size_t size, int channels = 0);

// uint8 [h, w, n] (n = 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA) to `channels` channels (0: as is):
// alpha is dropped or added as 255, grey is replicated to RGB, RGB becomes grey by
// tf.image.rgb_to_grayscale's formula (above). The decoders' last step.
Tensor ConvertImageChannels(Tensor image, int channels);

// The JPEG variants a corpus of photographs holds besides baseline 4:2:0.
struct JpegEncodeOptions {
  int quality = 90;  // 1..100
  bool progressive = false;
  // Luma sampling factors of a colour image: 2x2 is 4:2:0, 2x1 4:2:2, 1x1 4:4:4.
  int h_samp = 2, v_samp = 2;
};
// REQUIRES: image is uint8 [h, w, c] with c in {1, 3, 4} (4: CMYK with an Adobe marker, the
// values as given: Adobe's files hold them inverted); quality 1..100, sampling factors 1..2.
std::string EncodeJpeg(const Tensor& image, const JpegEncodeOptions& options);
inline std::string EncodeJpeg(const Tensor& image, int quality = 90) {
  return EncodeJpeg(image, JpegEncodeOptions{.quality = quality});
}
// REQUIRES: image is uint8 [h, w, c] with c in {1, 2, 3, 4}.
std::string EncodePng(const Tensor& image);

// Replaces feature `feature` (uint8 bytes) with the decoded uint8 [h, w, c] image (stored
// under `out`, default the same name).
MapFn DecodeImage(std::string feature, int channels = 0, std::string out = "");

}  // namespace shardflow::pipeline
