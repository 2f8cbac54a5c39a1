#include "io/pipeline/ops/jpeg_window.hpp"

// clang-format off
#include <cstdio>   // jpeglib.h needs FILE and size_t first
#include <csetjmp>
#include <jpeglib.h>
// clang-format on

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/ops/jpeg_color.hpp"
#include "io/pipeline/ops/jpeg_errors.hpp"

namespace shardflow::pipeline {
namespace {

// Columns a crop spans at least (see ReadWindow): 4:1:1 chroma then has 4 samples.
constexpr JDIMENSION kMinCropWidth = 16;

// One decompression and its error state. The phases below each setjmp on err.jump and hold no
// C++ objects with destructors; the caller owns the buffers and always destroys cinfo.
struct JpegWindowReader {
  jpeg_decompress_struct cinfo;
  jpeg_detail::JpegError err;
  bool cmyk = false;  // decoded as CMYK, converted to RGB after (jpeg_color.hpp)
};

void InitReader(JpegWindowReader* r) {
  std::memset(&r->cinfo, 0, sizeof(r->cinfo));  // jpeg_destroy on a failed create sees no pool
  jpeg_detail::InstallJpegErrors(reinterpret_cast<j_common_ptr>(&r->cinfo), &r->err);
}

// Reads the header; with scale_denom > 0 also sets the output colour space (as DecodeJpeg) and
// the DCT scale and computes the output size (output_width/height/components).
bool StartJpeg(JpegWindowReader* r, const uint8_t* data, size_t size, int channels,
               int scale_denom) {
  if (setjmp(r->err.jump) != 0) return false;
  j_decompress_ptr cinfo = &r->cinfo;
  jpeg_create_decompress(cinfo);
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(cinfo, TRUE);
  if (scale_denom == 0) return true;
  r->cmyk = jpeg_detail::SetOutputColorSpace(cinfo, channels);
  cinfo->scale_num = 1;
  cinfo->scale_denom = static_cast<unsigned int>(scale_denom);
  jpeg_calc_output_dimensions(cinfo);
  return true;
}

// Decodes the rows and columns of `win` (in output pixels) into `out` ([win.height,
// win.width, output_components]), through `row` (one full output row).
bool ReadWindow(JpegWindowReader* r, const ImageWindow& win, uint8_t* row, uint8_t* out) {
  if (setjmp(r->err.jump) != 0) return false;
  j_decompress_ptr cinfo = &r->cinfo;
  jpeg_start_decompress(cinfo);
  const auto comps = static_cast<size_t>(cinfo->output_components);
  const auto top = static_cast<JDIMENSION>(win.top), left = static_cast<JDIMENSION>(win.left);
  const auto rows = static_cast<JDIMENSION>(win.height);
  const size_t out_stride = static_cast<size_t>(win.width) * comps;
  // One more column (row) on each side that has one: the edge pixels of a crop are upsampled
  // from the same chroma neighbours as in the full image. libjpeg widens x/width further, to
  // iMCU boundaries, and sets output_width to the decoded width.
  // And at least kMinCropWidth columns: libjpeg-turbo upsamples a component only 1 or 2 samples
  // wide by replication instead of fancy upsampling (jdsample.c), which would change the pixels.
  JDIMENSION x = left > 0 ? left - 1 : 0;
  JDIMENSION end =
      std::min<JDIMENSION>(left + static_cast<JDIMENSION>(win.width) + 1, cinfo->output_width);
  if (end - x < kMinCropWidth) {
    end = std::min<JDIMENSION>(x + kMinCropWidth, cinfo->output_width);
    x = end > kMinCropWidth ? std::min(x, end - kMinCropWidth) : 0;
  }
  JDIMENSION width = end - x;
  if (width < cinfo->output_width) jpeg_crop_scanline(cinfo, &x, &width);
  const JDIMENSION first = top > 0 ? top - 1 : 0;
  if (first > 0) jpeg_skip_scanlines(cinfo, first);
  while (cinfo->output_scanline < top + rows) {
    const JDIMENSION y = cinfo->output_scanline;
    jpeg_read_scanlines(cinfo, &row, 1);
    if (y >= top) std::memcpy(out + (y - top) * out_stride, row + (left - x) * comps, out_stride);
  }
  // The rows below: entropy-decoded to the end of the data, not reconstructed, so that a JPEG
  // damaged or cut short below the window fails as a full decode does (as
  // tf.image.decode_and_crop_jpeg reads to the end too): never a silently short file.
  // (libjpeg-turbo's skip to the very end reads nothing, so skip to the last row and read it.)
  const JDIMENSION last = cinfo->output_height - 1;
  if (cinfo->output_scanline < last) jpeg_skip_scanlines(cinfo, last - cinfo->output_scanline);
  while (cinfo->output_scanline < cinfo->output_height) jpeg_read_scanlines(cinfo, &row, 1);
  jpeg_finish_decompress(cinfo);
  return true;
}

[[noreturn]] void Fail(JpegWindowReader* r) {
  const std::string message = r->err.message;
  jpeg_destroy_decompress(&r->cinfo);
  throw Error(ErrorCode::kDataLoss, "JPEG decode failed: " + message);
}

}  // namespace

JpegHeader ReadJpegHeader(const uint8_t* data, size_t size) {
  JpegWindowReader r;
  InitReader(&r);
  if (!StartJpeg(&r, data, size, 0, 0)) Fail(&r);
  JpegHeader header{.height = r.cinfo.image_height,
                    .width = r.cinfo.image_width,
                    .components = r.cinfo.num_components};
  jpeg_destroy_decompress(&r.cinfo);
  return header;
}

ImageWindow ScaledWindow(const ImageWindow& w, int64_t image_height, int64_t image_width,
                         int scale_denom) {
  const int64_t s = scale_denom;
  const int64_t sh = (image_height + s - 1) / s, sw = (image_width + s - 1) / s;
  const int64_t top = w.top / s, left = w.left / s;
  const int64_t bottom = std::min(sh, (w.top + w.height + s - 1) / s);
  const int64_t right = std::min(sw, (w.left + w.width + s - 1) / s);
  return {.top = top, .left = left, .height = bottom - top, .width = right - left};
}

Tensor DecodeJpegWindow(const uint8_t* data, size_t size, const ImageWindow& window, int channels,
                        int scale_denom) {
  if (channels != 0 && channels != 1 && channels != 3) {
    throw Error(ErrorCode::kInvalidArgument, "JPEG decode: channels must be 0, 1 or 3");
  }
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8) {
    throw Error(ErrorCode::kInvalidArgument,
                "JPEG window decode: scale_denom must be 1, 2, 4 or 8");
  }
  JpegWindowReader r;
  InitReader(&r);
  if (!StartJpeg(&r, data, size, channels, scale_denom)) Fail(&r);
  const int64_t h = r.cinfo.image_height, w = r.cinfo.image_width;
  if (window.height < 1 || window.width < 1 || window.top < 0 || window.left < 0 ||
      window.top + window.height > h || window.left + window.width > w) {
    jpeg_destroy_decompress(&r.cinfo);
    throw Error(ErrorCode::kInvalidArgument,
                "JPEG window decode: window [" + std::to_string(window.top) + ", " +
                    std::to_string(window.left) + ", " + std::to_string(window.height) + ", " +
                    std::to_string(window.width) + "] is not inside the " + std::to_string(h) +
                    "x" + std::to_string(w) + " image");
  }
  const ImageWindow scaled = ScaledWindow(window, h, w, scale_denom);
  const int comps = r.cinfo.output_components;
  Tensor image(DType::kUInt8, {scaled.height, scaled.width, comps});
  std::vector<uint8_t> row(static_cast<size_t>(r.cinfo.output_width) * comps);
  if (!ReadWindow(&r, scaled, row.data(), image.data<uint8_t>())) Fail(&r);
  const bool adobe = r.cinfo.saw_Adobe_marker != 0;
  jpeg_destroy_decompress(&r.cinfo);
  if (r.cmyk) image = jpeg_detail::CmykToRgb(image, adobe);
  return ConvertImageChannels(std::move(image), channels);
}

int JpegScaleFor(const ImageWindow& window, int64_t out_height, int64_t out_width) {
  for (int s : {8, 4, 2}) {
    if (window.height >= s * out_height && window.width >= s * out_width) return s;
  }
  return 1;
}

}  // namespace shardflow::pipeline
