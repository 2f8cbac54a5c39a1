// The output colour space of the JPEG decoders (image_codec.cpp's DecodeJpeg and
// jpeg_window.cpp's DecodeJpegWindow ask libjpeg for the same one). Internal to io/pipeline/ops.
//
// Grey from a colour JPEG is computed from RGB (ConvertImageChannels, as for PNG), not taken
// from libjpeg's Y. CMYK and YCCK JPEGs (Photoshop writes them; ImageNet's training set holds
// 22) libjpeg cannot turn into RGB: they are decoded as CMYK and CmykToRgb converts,
// so that asking for RGB or grey gives an image instead of a decode error.
#pragma once

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on

#include "core/tensor.hpp"

namespace shardflow::pipeline::jpeg_detail {

// Sets cinfo's out_color_space for `channels` (0: as stored, 1, 3) after jpeg_read_header;
// true when the output is CMYK for CmykToRgb.
inline bool SetOutputColorSpace(jpeg_decompress_struct* cinfo, int channels) {
  if (channels == 0) return false;
  if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    cinfo->out_color_space = JCS_CMYK;
    return true;
  }
  if (channels == 3 || cinfo->jpeg_color_space != JCS_GRAYSCALE) cinfo->out_color_space = JCS_RGB;
  return false;
}

// uint8 [h, w, 4] CMYK as libjpeg outputs it to [h, w, 3] RGB, rounded to nearest. A file with
// Adobe's marker stores the inks inverted (255 = no ink): R = C * K / 255; otherwise
// R = (255 - C) * (255 - K) / 255 (G from M, B from Y alike).
Tensor CmykToRgb(const Tensor& cmyk, bool adobe_inverted);

}  // namespace shardflow::pipeline::jpeg_detail
