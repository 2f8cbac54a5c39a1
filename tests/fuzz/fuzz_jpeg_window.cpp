// libFuzzer target: the JPEG window decoder (io/pipeline/ops/jpeg_window.hpp) and the fused
// crop (ops/resized_crop.hpp) on arbitrary bytes. Input: 7 mode bytes (channels, DCT scale,
// window top/left/height/width as fractions of the header's size, output size), then the JPEG.
// A malformed image must end in shardflow::Error; an accepted window must have the scaled
// window's shape, and at scale 1 equal DecodeJpeg's crop whenever DecodeJpeg accepts the image.
// Images over 2^22 pixels are skipped (memory, not the decoder, would be the finding).
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"
#include "io/pipeline/ops/image_augment.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/ops/jpeg_window.hpp"
#include "io/pipeline/ops/resized_crop.hpp"

using namespace shardflow;
using namespace shardflow::pipeline;

namespace {

// [0, n) from a byte.
int64_t Part(uint8_t b, int64_t n) { return n * b / 256; }

void CheckWindow(const uint8_t* jpg, size_t size, const JpegHeader& header, const uint8_t* mode) {
  const int channels = (mode[0] % 3 == 0) ? 0 : (mode[0] % 3 == 1 ? 1 : 3);
  const int scale = 1 << (mode[1] % 4);
  ImageWindow win;
  win.top = Part(mode[2], header.height);
  win.left = Part(mode[3], header.width);
  win.height = 1 + Part(mode[4], header.height - win.top);
  win.width = 1 + Part(mode[5], header.width - win.left);
  const Tensor part = DecodeJpegWindow(jpg, size, win, channels, scale);
  const ImageWindow sw = ScaledWindow(win, header.height, header.width, scale);
  if (part.dim(0) != sw.height || part.dim(1) != sw.width) std::abort();
  if (scale != 1) return;
  Tensor full;
  try {
    full = DecodeJpeg(jpg, size, channels);
  } catch (const Error&) {
    return;  // damage outside the window: the window decode may still succeed
  }
  const Tensor want = CropImage(full, win.top, win.left, win.height, win.width);
  if (want.shape() != part.shape()) std::abort();
  if (std::memcmp(want.raw_data(), part.raw_data(), want.byte_size()) != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr size_t kMode = 7;
  if (size < kMode) return 0;
  const uint8_t* jpg = data + kMode;
  const size_t n = size - kMode;
  try {
    const JpegHeader header = ReadJpegHeader(jpg, n);
    if (header.height < 1 || header.width < 1) std::abort();
    if (header.height * header.width > (int64_t{1} << 22)) return 0;
    CheckWindow(jpg, n, header, data);
    Tensor bytes(DType::kUInt8, {static_cast<int64_t>(n)});
    std::memcpy(bytes.raw_data(), jpg, n);
    const int64_t out = 1 + data[6] % 64;
    const Tensor crop = CropAndResize(
        bytes, out, out,
        [&](int64_t h, int64_t w) { return CenterCropWindow(h, w, out, out, 0.875); }, 0, true);
    if (crop.dim(0) != out || crop.dim(1) != out) std::abort();
  } catch (const Error&) {
  }
  return 0;
}
