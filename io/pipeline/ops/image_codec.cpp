#include "io/pipeline/ops/image_codec.hpp"

// clang-format off
#include <cstdio>   // jpeglib.h needs FILE and size_t first
#include <csetjmp>
#include <jpeglib.h>
#include <png.h>
// clang-format on

#include <cstring>
#include <vector>

namespace shardflow::pipeline {
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: jump back to the
// call site (no C++ objects with destructors live between setjmp and the libjpeg calls).
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void JpegSilence(j_common_ptr, int) {}

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
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.emit_message = JpegSilence;
  Tensor image;
  if (setjmp(err.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    throw Error(ErrorCode::kDataLoss, std::string("JPEG decode failed: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (channels == 1) cinfo.out_color_space = JCS_GRAYSCALE;
  if (channels == 3) cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const int64_t h = cinfo.output_height, w = cinfo.output_width, c = cinfo.output_components;
  image = Tensor(DType::kUInt8, {h, w, c});
  uint8_t* out = image.data<uint8_t>();
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out + static_cast<size_t>(cinfo.output_scanline) * w * c;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return image;
}

std::string EncodeJpeg(const Tensor& image, int quality) {
  CheckImage(image, "JPEG encode", 3);
  if (image.dim(2) == 2) throw Error(ErrorCode::kInvalidArgument, "JPEG encode: 2 channels");
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
  cinfo.input_components = static_cast<int>(image.dim(2));
  cinfo.in_color_space = image.dim(2) == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
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
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, data, size)) {
    const std::string message = png.message;
    png_image_free(&png);
    throw Error(ErrorCode::kDataLoss, "PNG decode failed: " + message);
  }
  if (channels == 0) channels = PNG_IMAGE_PIXEL_CHANNELS(png.format);
  static const png_uint_32 kFormats[] = {0, PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB,
                                         PNG_FORMAT_RGBA};
  png.format = kFormats[channels];
  Tensor image(DType::kUInt8,
               {static_cast<int64_t>(png.height), static_cast<int64_t>(png.width), channels});
  if (!png_image_finish_read(&png, nullptr, image.raw_data(), 0, nullptr)) {
    const std::string message = png.message;
    png_image_free(&png);
    throw Error(ErrorCode::kDataLoss, "PNG decode failed: " + message);
  }
  return image;
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
