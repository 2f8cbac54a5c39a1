#include "io/pipeline/ops/image_codec.hpp"

// clang-format off
#include <cstdio>   // jpeglib.h needs FILE and size_t first
#include <csetjmp>
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include "io/pipeline/ops/jpeg_color.hpp"
#include "io/pipeline/ops/jpeg_errors.hpp"

#include <cstring>
#include <vector>

namespace shardflow::pipeline {
namespace {

using jpeg_detail::JpegError;
using jpeg_detail::JpegErrorExit;

// TensorFlow's tf.image.rgb_to_grayscale on uint8: x = float32(v) * float32(1/255),
// g = x_r * 0.2989 + x_g * 0.5870 + x_b * 0.1140 (float32, each product rounded, summed left to
// right), grey = uint8(g * 255.5) (truncation, convert_image_dtype's float -> uint8). The
// products come from tables, so no fused multiply-add changes the rounding.
struct GreyTables {
  float weighted[3][256];
  GreyTables() {
    const float kWeights[3] = {0.2989f, 0.5870f, 0.1140f};
    for (int c = 0; c < 3; ++c) {
      for (int v = 0; v < 256; ++v) {
        const float x = static_cast<float>(v) * (1.0f / 255.0f);
        weighted[c][v] = x * kWeights[c];
      }
    }
  }
  uint8_t Grey(const uint8_t* rgb) const {
    const float g = (weighted[0][rgb[0]] + weighted[1][rgb[1]]) + weighted[2][rgb[2]];
    return static_cast<uint8_t>(g * 255.5f);
  }
};

}  // namespace

Tensor ConvertImageChannels(Tensor image, int channels) {
  const int64_t n = image.dim(2);
  if (channels == 0 || channels == n) return image;
  static const GreyTables tables;
  const int64_t pixels = image.dim(0) * image.dim(1);
  Tensor out(DType::kUInt8, {image.dim(0), image.dim(1), channels});
  const uint8_t* in = image.data<uint8_t>();
  uint8_t* o = out.data<uint8_t>();
  const bool in_colour = n >= 3, in_alpha = n == 2 || n == 4;
  const bool out_colour = channels >= 3, out_alpha = channels == 2 || channels == 4;
  for (int64_t i = 0; i < pixels; ++i, in += n, o += channels) {
    if (out_colour) {
      for (int c = 0; c < 3; ++c) o[c] = in[in_colour ? c : 0];
    } else {
      o[0] = in_colour ? tables.Grey(in) : in[0];
    }
    if (out_alpha) o[channels - 1] = in_alpha ? in[n - 1] : 255;
  }
  return out;
}

namespace {

// PNG through libpng's own API (not the simplified png_image one, which converts 16-bit
// samples and colour to grey with gamma). Errors jump back to the setjmp of the phase running.
struct PngState {
  const uint8_t* data;
  size_t size;
  size_t pos;
  std::jmp_buf jump;
  char message[256];
};

void PngReadData(png_structp png, png_bytep out, png_size_t n) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > state->size - state->pos) png_error(png, "premature end of data (truncated PNG)");
  std::memcpy(out, state->data + state->pos, n);
  state->pos += n;
}

void PngOnError(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message);
  std::longjmp(state->jump, 1);
}

void PngOnWarning(png_structp, png_const_charp) {}

struct PngLayout {
  png_uint_32 width = 0, height = 0;
  int channels = 0;
};

// Reads the header and sets the transforms: palette -> RGB (RGBA with a tRNS chunk), grey of
// 1/2/4 bits -> 8 bits, 16 bits -> the high byte (v >> 8, linear: TensorFlow's uint16 -> uint8
// convert_image_dtype). No gamma is applied.
bool PngStart(png_structp png, png_infop info, PngState* state, PngLayout* layout) {
  if (setjmp(state->jump) != 0) return false;
  png_read_info(png, info);
  const int type = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (png_get_valid(png, info, PNG_INFO_tRNS)) png_set_tRNS_to_alpha(png);
  if (depth == 16) png_set_strip_16(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  layout->width = png_get_image_width(png, info);
  layout->height = png_get_image_height(png, info);
  layout->channels = png_get_channels(png, info);
  return true;
}

bool PngFinish(png_structp png, png_infop info, PngState* state, png_bytepp rows) {
  if (setjmp(state->jump) != 0) return false;
  png_read_image(png, rows);
  png_read_end(png, info);
  return true;
}

void CheckImage(const Tensor& image, const char* what, int max_channels) {
  if (image.dtype() != DType::kUInt8 || image.rank() != 3 || image.dim(2) < 1 ||
      image.dim(2) > max_channels) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + ": need a uint8 [h,w,c] image, got " +
                    DTypeName(image.dtype()) + ShapeToString(image.shape()));
  }
}

}  // namespace

Tensor DecodeJpeg(const uint8_t* data, size_t size, int channels) {
  if (channels != 0 && channels != 1 && channels != 3) {
    throw Error(ErrorCode::kInvalidArgument, "JPEG decode: channels must be 0, 1 or 3");
  }
  jpeg_decompress_struct cinfo;
  JpegError err;
  jpeg_detail::InstallJpegErrors(reinterpret_cast<j_common_ptr>(&cinfo), &err);
  Tensor image;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    throw Error(ErrorCode::kDataLoss, std::string("JPEG decode failed: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const bool cmyk = jpeg_detail::SetOutputColorSpace(&cinfo, channels);
  jpeg_start_decompress(&cinfo);
  const int64_t h = cinfo.output_height, w = cinfo.output_width, c = cinfo.output_components;
  image = Tensor(DType::kUInt8, {h, w, c});
  uint8_t* out = image.data<uint8_t>();
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out + static_cast<size_t>(cinfo.output_scanline) * w * c;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  const bool adobe = cinfo.saw_Adobe_marker != 0;
  jpeg_destroy_decompress(&cinfo);
  if (cmyk) image = jpeg_detail::CmykToRgb(image, adobe);
  return ConvertImageChannels(std::move(image), channels);
}

namespace jpeg_detail {

Tensor CmykToRgb(const Tensor& cmyk, bool adobe_inverted) {
  const int64_t pixels = cmyk.dim(0) * cmyk.dim(1);
  Tensor rgb(DType::kUInt8, {cmyk.dim(0), cmyk.dim(1), 3});
  const uint8_t* in = cmyk.data<uint8_t>();
  uint8_t* out = rgb.data<uint8_t>();
  for (int64_t p = 0; p < pixels; ++p, in += 4, out += 3) {
    const unsigned k = adobe_inverted ? in[3] : 255u - in[3];
    for (int c = 0; c < 3; ++c) {
      const unsigned ink = adobe_inverted ? in[c] : 255u - in[c];
      out[c] = static_cast<uint8_t>((ink * k + 127) / 255);
    }
  }
  return rgb;
}

}  // namespace jpeg_detail

std::string EncodeJpeg(const Tensor& image, const JpegEncodeOptions& o) {
  CheckImage(image, "JPEG encode", 4);
  if (image.dim(2) == 2) throw Error(ErrorCode::kInvalidArgument, "JPEG encode: 2 channels");
  if (o.quality < 1 || o.quality > 100 || o.h_samp < 1 || o.h_samp > 2 || o.v_samp < 1 ||
      o.v_samp > 2) {
    throw Error(ErrorCode::kInvalidArgument,
                "JPEG encode: quality 1..100 and sampling factors 1..2, got quality " +
                    std::to_string(o.quality));
  }
  jpeg_compress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  unsigned char* buffer = nullptr;
  unsigned long length = 0;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    throw Error(ErrorCode::kInternal, std::string("JPEG encode failed: ") + err.message);
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buffer, &length);
  cinfo.image_width = static_cast<JDIMENSION>(image.dim(1));
  cinfo.image_height = static_cast<JDIMENSION>(image.dim(0));
  const int c = static_cast<int>(image.dim(2));
  cinfo.input_components = c;
  cinfo.in_color_space = c == 1 ? JCS_GRAYSCALE : c == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&cinfo);  // CMYK: stored as such with an Adobe marker (inverted values)
  jpeg_set_quality(&cinfo, o.quality, TRUE);
  if (c == 3) {
    cinfo.comp_info[0].h_samp_factor = o.h_samp;
    cinfo.comp_info[0].v_samp_factor = o.v_samp;
  }
  if (o.progressive) jpeg_simple_progression(&cinfo);
  jpeg_start_compress(&cinfo, TRUE);
  const uint8_t* in = image.data<uint8_t>();
  const size_t stride = static_cast<size_t>(image.dim(1) * image.dim(2));
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

Tensor DecodePng(const uint8_t* data, size_t size, int channels) {
  if (channels < 0 || channels > 4) {
    throw Error(ErrorCode::kInvalidArgument, "PNG decode: channels must be 0..4");
  }
  if (size < 8 || png_sig_cmp(data, 0, 8) != 0) {
    throw Error(ErrorCode::kDataLoss, "PNG decode failed: not a PNG signature");
  }
  PngState state{};
  state.data = data;
  state.size = size;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, PngOnError, PngOnWarning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    throw Error(ErrorCode::kInternal, "PNG decode: out of memory");
  }
  png_set_read_fn(png, &state, PngReadData);
  PngLayout layout;
  bool ok = PngStart(png, info, &state, &layout);
  Tensor image;
  std::vector<png_bytep> rows;
  if (ok) {
    image = Tensor(DType::kUInt8, {static_cast<int64_t>(layout.height),
                                   static_cast<int64_t>(layout.width), layout.channels});
    const size_t stride = static_cast<size_t>(layout.width) * layout.channels;
    for (png_uint_32 y = 0; y < layout.height; ++y)
      rows.push_back(image.data<uint8_t>() + y * stride);
    ok = PngFinish(png, info, &state, rows.data());
  }
  png_destroy_read_struct(&png, &info, nullptr);
  if (!ok) throw Error(ErrorCode::kDataLoss, std::string("PNG decode failed: ") + state.message);
  return ConvertImageChannels(std::move(image), channels);
}

std::string EncodePng(const Tensor& image) {
  CheckImage(image, "PNG encode", 4);
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.dim(1));
  png.height = static_cast<png_uint_32>(image.dim(0));
  static const png_uint_32 kFormats[] = {0, PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB,
                                         PNG_FORMAT_RGBA};
  png.format = kFormats[image.dim(2)];
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, image.raw_data(), 0, nullptr)) {
    throw Error(ErrorCode::kInternal, std::string("PNG encode failed: ") + png.message);
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, image.raw_data(), 0, nullptr)) {
    throw Error(ErrorCode::kInternal, std::string("PNG encode failed: ") + png.message);
  }
  out.resize(size);
  return out;
}

Tensor DecodeImageBytes(const uint8_t* data, size_t size, int channels) {
  if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    return DecodeJpeg(data, size, channels);
  }
  if (size >= 4 && data[0] == 0x89 && data[1] == 'P' && data[2] == 'N' && data[3] == 'G') {
    return DecodePng(data, size, channels);
  }
  throw Error(ErrorCode::kDataLoss,
              "image bytes are neither JPEG nor PNG (" + std::to_string(size) + " bytes)");
}

MapFn DecodeImage(std::string feature, int channels, std::string out) {
  if (out.empty()) out = feature;
  return [feature, channels, out](Element& e, const MapContext&) {
    const Tensor& bytes = e.Get(feature);
    if (bytes.dtype() != DType::kUInt8) {
      throw Error(ErrorCode::kInvalidArgument,
                  "decode_image: feature '" + feature + "' must be uint8 bytes", {.key = feature});
    }
    try {
      e.Set(out, DecodeImageBytes(bytes.data<uint8_t>(), bytes.byte_size(), channels));
    } catch (const Error& err) {
      ErrorContext ctx = err.context();
      ctx.key = feature;
      throw Error(err.code(), err.status().message(), ctx);
    }
  };
}

}  // namespace shardflow::pipeline
