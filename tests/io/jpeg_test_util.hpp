// JPEG test images: synthetic pixels and an encoder with the variants DecodeJpeg meets in the
// wild (chroma subsampling 4:2:0 / 4:2:2 / 4:4:4, greyscale, progressive, CMYK), which
// EncodeJpeg (ops/image_codec.hpp) does not offer.
#pragma once

// clang-format off
#include <cstdio>  // jpeglib.h needs FILE and size_t first
#include <jpeglib.h>
// clang-format on

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>

#include "core/tensor.hpp"

namespace shardflow::testing::jpeg {

struct EncodeOptions {
  int quality = 90;
  bool progressive = false;
  // Luma sampling factors: 2x2 is 4:2:0, 2x1 4:2:2, 1x1 4:4:4 (colour images only).
  int h_samp = 2, v_samp = 2;
};

// uint8 [h, w, c], c in {1, 3, 4} (4: CMYK, stored as Adobe CMYK).
inline std::string Encode(const Tensor& image, const EncodeOptions& o = {}) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr err;
  cinfo.err = jpeg_std_error(&err);  // a bad test image exits: the options are the test's own
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long length = 0;
  jpeg_mem_dest(&cinfo, &buffer, &length);
  const int c = static_cast<int>(image.dim(2));
  cinfo.image_width = static_cast<JDIMENSION>(image.dim(1));
  cinfo.image_height = static_cast<JDIMENSION>(image.dim(0));
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : c == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, o.quality, TRUE);
  if (c == 3) {
    cinfo.comp_info[0].h_samp_factor = o.h_samp;
    cinfo.comp_info[0].v_samp_factor = o.v_samp;
  }
  if (o.progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  const uint8_t* in = image.data<uint8_t>();
  const size_t stride = static_cast<size_t>(image.dim(1) * c);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(in + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string out(reinterpret_cast<const char*>(buffer), length);
  std::free(buffer);
  return out;
}

// Independent uniform noise: the worst case for any resampling.
inline Tensor Noise(int64_t h, int64_t w, int64_t c, uint32_t seed) {
  Tensor t(DType::kUInt8, {h, w, c});
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<uint8_t>()[i] = rng() & 0xFF;
  return t;
}

// Low-frequency waves (periods of tens of pixels), as in photographs' smooth regions.
inline Tensor Smooth(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kUInt8, {h, w, c});
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k) {
        const double v =
            128 + 60 * std::sin(0.05 * x + 0.9 * k) + 50 * std::cos(0.07 * y - 0.4 * k);
        t.data<uint8_t>()[(y * w + x) * c + k] = static_cast<uint8_t>(std::lround(v));
      }
  return t;
}

inline const uint8_t* Data(const std::string& s) {
  return reinterpret_cast<const uint8_t*>(s.data());
}

}  // namespace shardflow::testing::jpeg
