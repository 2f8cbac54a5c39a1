// DecodeJpegWindow against DecodeJpeg + CropImage (exact at scale 1) over awkward sizes, every
// edge, 1-pixel windows and the JPEG variants (4:2:0, 4:2:2, 4:4:4, grey, progressive, CMYK);
// DCT-downscaled windows against decode-crop-resize (measured bounds); damaged JPEGs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "io/pipeline/ops/image_augment.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/ops/jpeg_window.hpp"

#include "io/pipeline/ops/jpeg_color.hpp"
#include "io/pipeline/ops/resized_crop.hpp"
#include "jpeg_test_util.hpp"

namespace shardflow::pipeline {
namespace jpeg_window_test {

namespace jpeg = shardflow::testing::jpeg;

struct Variant {
  const char* name;
  int channels_stored;
  jpeg::EncodeOptions options;
};

const std::vector<Variant>& Variants() {
  static const std::vector<Variant> v = {
      {"420", 3, {.h_samp = 2, .v_samp = 2}},
      {"422", 3, {.h_samp = 2, .v_samp = 1}},
      {"444", 3, {.h_samp = 1, .v_samp = 1}},
      {"grey", 1, {}},
      {"progressive420", 3, {.progressive = true, .h_samp = 2, .v_samp = 2}},
      {"progressive444", 3, {.progressive = true, .h_samp = 1, .v_samp = 1}},
      {"progressive_grey", 1, {.progressive = true}},
  };
  return v;
}

// Windows touching every edge and corner, 1-pixel windows, the whole image and random ones.
std::vector<ImageWindow> Windows(int64_t h, int64_t w, uint32_t seed) {
  std::vector<ImageWindow> out = {
      {0, 0, h, w},     {0, 0, 1, 1},         {h - 1, w - 1, 1, 1},    {0, w - 1, 1, 1},
      {h - 1, 0, 1, 1}, {0, 0, h, 1},         {0, w - 1, h, 1},        {0, 0, 1, w},
      {h - 1, 0, 1, w}, {h / 2, w / 2, 1, 1}, {0, w / 3, h, w - w / 3}};
  std::mt19937 rng(seed);
  for (int i = 0; i < 12; ++i) {
    const int64_t top = rng() % h, left = rng() % w;
    out.push_back({top, left, 1 + static_cast<int64_t>(rng() % (h - top)),
                   1 + static_cast<int64_t>(rng() % (w - left))});
  }
  return out;
}

std::string Text(const ImageWindow& win) {
  return "[" + std::to_string(win.top) + "," + std::to_string(win.left) + "," +
         std::to_string(win.height) + "," + std::to_string(win.width) + "]";
}

TEST(JpegWindow, ScaleOneEqualsDecodeThenCropExactly) {
  const std::vector<std::pair<int64_t, int64_t>> sizes = {
      {333, 517}, {17, 9}, {1, 1}, {8, 24}, {35, 70}};
  for (const Variant& v : Variants()) {
    for (auto [h, w] : sizes) {
      const std::string bytes = jpeg::Encode(
          jpeg::Noise(h, w, v.channels_stored, static_cast<uint32_t>(h * w)), v.options);
      const JpegHeader header = ReadJpegHeader(jpeg::Data(bytes), bytes.size());
      ASSERT_EQ(header.height, h);
      ASSERT_EQ(header.width, w);
      ASSERT_EQ(header.components, v.channels_stored);
      for (int channels : {0, 1, 3}) {
        const Tensor full = DecodeJpeg(jpeg::Data(bytes), bytes.size(), channels);
        for (const ImageWindow& win : Windows(h, w, static_cast<uint32_t>(h + w))) {
          const Tensor want = CropImage(full, win.top, win.left, win.height, win.width);
          const Tensor got = DecodeJpegWindow(jpeg::Data(bytes), bytes.size(), win, channels);
          ASSERT_EQ(got.shape(), want.shape()) << v.name << " " << Text(win);
          ASSERT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.byte_size()), 0)
              << v.name << " " << h << "x" << w << " c" << channels << " " << Text(win);
        }
      }
    }
  }
}

TEST(JpegWindow, CmykBehavesAsDecodeJpeg) {
  const Tensor inks = jpeg::Noise(40, 30, 4, 7);
  const std::string bytes = jpeg::Encode(inks);  // libjpeg writes Adobe's marker for CMYK
  const Tensor full = DecodeJpeg(jpeg::Data(bytes), bytes.size(), 0);
  ASSERT_EQ(full.dim(2), 4);
  const ImageWindow win{5, 7, 20, 11};
  const Tensor got = DecodeJpegWindow(jpeg::Data(bytes), bytes.size(), win, 0);
  const Tensor want = CropImage(full, win.top, win.left, win.height, win.width);
  ASSERT_EQ(got.shape(), want.shape());
  EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.byte_size()), 0);
  // RGB (and grey from it) from CMYK: R = C * K / 255 rounded (Adobe's inverted inks), the
  // window decode a crop of the full one.
  const Tensor rgb = DecodeJpeg(jpeg::Data(bytes), bytes.size(), 3);
  ASSERT_EQ(rgb.shape(), (Shape{40, 30, 3}));
  for (int64_t p = 0; p < 40 * 30; ++p) {
    const uint8_t* c = full.data<uint8_t>() + p * 4;
    for (int k = 0; k < 3; ++k) {
      ASSERT_EQ(rgb.data<uint8_t>()[p * 3 + k], (unsigned{c[k]} * c[3] + 127) / 255) << p;
    }
  }
  for (int channels : {1, 3}) {
    const Tensor whole = DecodeJpeg(jpeg::Data(bytes), bytes.size(), channels);
    EXPECT_EQ(whole.dim(2), channels);
    const Tensor part = DecodeJpegWindow(jpeg::Data(bytes), bytes.size(), win, channels);
    const Tensor crop = CropImage(whole, win.top, win.left, win.height, win.width);
    ASSERT_EQ(part.shape(), crop.shape());
    EXPECT_EQ(std::memcmp(part.raw_data(), crop.raw_data(), crop.byte_size()), 0) << channels;
  }
  const Tensor grey = DecodeJpeg(jpeg::Data(bytes), bytes.size(), 1);
  const Tensor via_rgb = ConvertImageChannels(rgb, 1);
  ASSERT_EQ(grey.shape(), via_rgb.shape());
  EXPECT_EQ(std::memcmp(grey.raw_data(), via_rgb.raw_data(), grey.byte_size()), 0)
      << "grey from CMYK goes through RGB";
  // Without Adobe's marker the inks are not inverted: no ink is white, full cyan no red.
  Tensor px(DType::kUInt8, {1, 2, 4});
  const uint8_t v[] = {0, 0, 0, 0, 255, 0, 0, 51};
  std::memcpy(px.raw_data(), v, sizeof(v));
  const Tensor plain = jpeg_detail::CmykToRgb(px, false);
  const uint8_t want_plain[] = {255, 255, 255, 0, 204, 204};
  EXPECT_EQ(std::memcmp(plain.raw_data(), want_plain, sizeof(want_plain)), 0);
}

TEST(JpegWindow, ScaledWindowAndScaleChoice) {
  // 100x75 at 1/4 is 25x19 (ceil); window rows [10, 30) -> [2, 8), columns [5, 75) -> [1, 19).
  EXPECT_EQ(ScaledWindow({10, 5, 20, 70}, 100, 75, 4), (ImageWindow{2, 1, 6, 18}));
  EXPECT_EQ(ScaledWindow({10, 5, 20, 70}, 100, 75, 1), (ImageWindow{10, 5, 20, 70}));
  EXPECT_EQ(JpegScaleFor({0, 0, 447, 500}, 224, 224), 1);  // < 2x in height
  EXPECT_EQ(JpegScaleFor({0, 0, 448, 500}, 224, 224), 2);
  EXPECT_EQ(JpegScaleFor({0, 0, 1800, 1792}, 224, 224), 8);
  EXPECT_EQ(JpegScaleFor({0, 0, 1800, 1791}, 224, 224), 4);
  // The scaled window decode is the scaled full decode's window.
  const std::string bytes = jpeg::Encode(jpeg::Smooth(123, 211, 3));
  for (int s : {2, 4, 8}) {
    const ImageWindow win{13, 29, 77, 150};
    const Tensor got = DecodeJpegWindow(jpeg::Data(bytes), bytes.size(), win, 3, s);
    const ImageWindow sw = ScaledWindow(win, 123, 211, s);
    EXPECT_EQ(got.shape(), (Shape{sw.height, sw.width, 3})) << s;
  }
}

// Mean and max |fused - decode, crop, resize| over the float outputs.
std::pair<double, double> FusedError(const std::string& bytes, const ImageWindow& win,
                                     int64_t out_h, int64_t out_w) {
  const WindowChooser choose = [&](int64_t, int64_t) { return win; };
  const Tensor decoded = DecodeJpeg(jpeg::Data(bytes), bytes.size(), 3);
  Tensor encoded(DType::kUInt8, {static_cast<int64_t>(bytes.size())});
  std::memcpy(encoded.raw_data(), bytes.data(), bytes.size());
  const Tensor want = CropAndResize(decoded, out_h, out_w, choose);
  const Tensor got = CropAndResize(encoded, out_h, out_w, choose, 3, true);
  double sum = 0, most = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double d = std::abs(got.data<float>()[i] - want.data<float>()[i]);
    sum += d;
    most = std::max(most, d);
  }
  return {sum / want.num_elements(), most};
}

TEST(JpegWindow, DctScalingStaysCloseToDecodeCropResize) {
  // A 1/s DCT downscale averages s x s blocks; bilinear resize of the full-resolution crop
  // samples 4 pixels. On smooth content both estimate the same surface; on noise the bilinear
  // reference aliases (it picks single noisy pixels) while the DCT-scaled one averages, so the
  // bound there says "no gross misplacement" (noise amplitude is ~74 grey levels rms).
  const std::string smooth = jpeg::Encode(jpeg::Smooth(480, 640, 3), {.quality = 95});
  const std::string noisy = jpeg::Encode(jpeg::Noise(480, 640, 3, 3), {.quality = 95});
  for (const ImageWindow& win : {ImageWindow{0, 0, 480, 640}, ImageWindow{37, 51, 300, 301},
                                 ImageWindow{100, 9, 129, 500}}) {
    for (int64_t out : {32, 64}) {
      const auto [smooth_mean, smooth_max] = FusedError(smooth, win, out, out);
      const auto [noisy_mean, noisy_max] = FusedError(noisy, win, out, out);
      std::printf(
          "window %s -> %lldx%lld (scale %d): smooth mean %.3f max %.3f, noise mean %.3f "
          "max %.3f\n",
          Text(win).c_str(), static_cast<long long>(out), static_cast<long long>(out),
          JpegScaleFor(win, out, out), smooth_mean, smooth_max, noisy_mean, noisy_max);
      EXPECT_LT(smooth_mean, 2.0) << Text(win);
      EXPECT_LT(smooth_max, 8.0) << Text(win);
      EXPECT_LT(noisy_mean, 40.0) << Text(win);
    }
  }
}

TEST(JpegWindow, DamagedJpegsAreDataLossAsDecodeJpeg) {
  const std::string good = jpeg::Encode(jpeg::Noise(64, 48, 3, 5));
  const ImageWindow whole{0, 0, 64, 48}, bottom{60, 10, 4, 30};
  // Truncated: the window's rows run past the data (whole, bottom), or the cut lies below the
  // window (top): every row is read to the end, so each fails as DecodeJpeg does.
  const std::string cut = good.substr(0, good.size() / 2);
  const ImageWindow top{0, 5, 3, 20};
  for (const ImageWindow& win : {whole, bottom, top}) {
    try {
      DecodeJpegWindow(jpeg::Data(cut), cut.size(), win, 3);
      FAIL() << "expected data loss for " << Text(win);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
      EXPECT_NE(std::string(e.what()).find("JPEG decode failed: "), std::string::npos);
    }
  }
  // A damaged header (height 0 in the SOF marker): the same message as DecodeJpeg's.
  std::string bad = good;
  const size_t sof = bad.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  bad[sof + 5] = 0;
  bad[sof + 6] = 0;
  std::string full_error;
  try {
    DecodeJpeg(jpeg::Data(bad), bad.size());
  } catch (const Error& e) {
    full_error = e.what();
  }
  ASSERT_FALSE(full_error.empty());
  for (auto call : {+[](const std::string& b) { ReadJpegHeader(jpeg::Data(b), b.size()); },
                    +[](const std::string& b) {
                      DecodeJpegWindow(jpeg::Data(b), b.size(), {0, 0, 1, 1});
                    }}) {
    try {
      call(bad);
      FAIL() << "expected data loss";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
      EXPECT_EQ(std::string(e.what()), full_error);
    }
  }
  EXPECT_THROW(ReadJpegHeader(jpeg::Data(good), 2), Error);
  EXPECT_THROW(ReadJpegHeader(nullptr, 0), Error);
  // A window outside the image is the caller's error.
  try {
    DecodeJpegWindow(jpeg::Data(good), good.size(), {60, 0, 5, 1});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
  }
}

}  // namespace jpeg_window_test
}  // namespace shardflow::pipeline
