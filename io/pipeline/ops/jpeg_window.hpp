// Decoding a window of a JPEG: only the header (ReadJpegHeader), or only the rows and iMCU
// columns a window [top, left, height, width] needs (DecodeJpegWindow), optionally downscaled
// in the DCT domain by 1/2, 1/4 or 1/8 (libjpeg-turbo's scale_denom): the decode-and-crop of
// tf.image.decode_and_crop_jpeg and DALI's ROI decode, the first step of a fused
// random_resized_crop / center_crop (ops/resized_crop.hpp).
//
// How: jpeg_crop_scanline narrows the decoded columns (widened by libjpeg to iMCU boundaries,
// and by us to one column more on each side that has one, so fancy upsampling sees the same
// chroma neighbours as in a full decode; the extra columns are trimmed), jpeg_skip_scanlines
// skips the rows above and, after the window, the rows below (entropy-decoded, not
// reconstructed). Progressive JPEGs work too (libjpeg-turbo buffers the whole coefficient
// image first, so they gain less).
//
// Pixels and errors are DecodeJpeg's (image_codec.hpp): the same channel semantics (channels 0
// as stored, including a CMYK JPEG's 4 channels; 1 grey by rgb_to_grayscale; 3 RGB) and a
// corrupt or truncated image, or any libjpeg warning, is Error(kDataLoss) "JPEG decode failed:
// <libjpeg's message>". With scale 1 the window is exactly CropImage(DecodeJpeg(...)) (tests/io/
// jpeg_window_test.cpp). The rows below the window are skipped too (entropy-decoded to the end, not
// reconstructed), so damage anywhere fails as in a full decode.
// Thread-safety: reentrant (no global codec state).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tensor.hpp"

namespace shardflow::pipeline {

struct JpegHeader {
  int64_t height = 0, width = 0;
  int components = 0;  // as stored: 1 grey, 3 YCbCr/RGB, 4 CMYK/YCCK
};

// A window of an image, in pixels.
struct ImageWindow {
  int64_t top = 0, left = 0, height = 0, width = 0;
  bool operator==(const ImageWindow&) const = default;
};

// jpeg_read_header only. Not a JPEG, or a damaged header: Error(kDataLoss) as DecodeJpeg.
JpegHeader ReadJpegHeader(const uint8_t* data, size_t size);

// The rows and columns of the image downscaled by 1/scale_denom (libjpeg's output size,
// ceil(size / scale_denom)) that cover `window`: [floor(top / s), ceil((top + height) / s)),
// likewise for columns, within the scaled image.
ImageWindow ScaledWindow(const ImageWindow& window, int64_t image_height, int64_t image_width,
                         int scale_denom);

// The pixels of ScaledWindow(window, h, w, scale_denom) of the image downscaled by
// 1/scale_denom, as uint8 [rows, cols, channels]. channels as DecodeJpeg.
// REQUIRES: the window lies inside the image, height and width >= 1 (else
// Error(kInvalidArgument)); scale_denom in {1, 2, 4, 8}.
Tensor DecodeJpegWindow(const uint8_t* data, size_t size, const ImageWindow& window,
                        int channels = 0, int scale_denom = 1);

// The DCT scale for decoding `window` to be resized to out_height x out_width: the largest s in
// {1, 2, 4, 8} whose downscaled window is still at least the output size in both dimensions
// (window.height >= s * out_height and window.width >= s * out_width).
int JpegScaleFor(const ImageWindow& window, int64_t out_height, int64_t out_width);

}  // namespace shardflow::pipeline
