// Built-in map functions: codecs, augmentations (against naive twins), tensor ops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io/pipeline/counter_rng.hpp"
#include "io/pipeline/ops/image_augment.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/ops/tensor_ops.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace pipeline_ops_test {

Tensor Gradient(int64_t h, int64_t w, int64_t c) {
  Tensor t(DType::kUInt8, {h, w, c});
  for (int64_t y = 0; y < h; ++y)
    for (int64_t x = 0; x < w; ++x)
      for (int64_t k = 0; k < c; ++k)
        t.data<uint8_t>()[(y * w + x) * c + k] =
            static_cast<uint8_t>((y * 9 + x * 5 + k * 60) % 256);
  return t;
}

Element WithFeature(const std::string& name, Tensor t, int64_t id = 0) {
  Element e;
  e.id = id;
  e.Set(name, std::move(t));
  return e;
}

Tensor Bytes(const std::string& s) {
  Tensor t(DType::kUInt8, {static_cast<int64_t>(s.size())});
  std::memcpy(t.raw_data(), s.data(), s.size());
  return t;
}

TEST(PipelineOps, PngRoundTripsExactly) {
  for (int64_t c : {1, 3, 4}) {
    const Tensor img = Gradient(7, 5, c);
    const std::string png = EncodePng(img);
    Element e = WithFeature("image", Bytes(png));
    DecodeImage("image")(e, {});
    const Tensor& out = e.Get("image");
    ASSERT_EQ(out.shape(), img.shape());
    EXPECT_EQ(std::memcmp(out.raw_data(), img.raw_data(), img.byte_size()), 0);
  }
}

TEST(PipelineOps, JpegRoundTripsApproximately) {
  const Tensor img = Gradient(28, 28, 1);
  const std::string jpg = EncodeJpeg(img, 95);
  const Tensor out = DecodeImageBytes(reinterpret_cast<const uint8_t*>(jpg.data()), jpg.size());
  ASSERT_EQ(out.shape(), (Shape{28, 28, 1}));
  double err = 0;
  for (int64_t i = 0; i < img.num_elements(); ++i) {
    err += std::abs(int(out.data<uint8_t>()[i]) - int(img.data<uint8_t>()[i]));
  }
  EXPECT_LT(err / img.num_elements(), 4.0);
  // Colour: decoded as RGB, and forced to grey.
  const std::string rgb = EncodeJpeg(Gradient(8, 8, 3));
  EXPECT_EQ(DecodeJpeg(reinterpret_cast<const uint8_t*>(rgb.data()), rgb.size()).dim(2), 3);
  EXPECT_EQ(DecodeJpeg(reinterpret_cast<const uint8_t*>(rgb.data()), rgb.size(), 1).dim(2), 1);
}

// The encoder's variants (the image benchmark's wild set) decode to the same size: progressive,
// 4:4:4, CMYK (to RGB); bad options are refused.
TEST(PipelineOps, JpegEncoderVariantsDecode) {
  const Tensor rgb = Gradient(24, 40, 3);
  Tensor cmyk(DType::kUInt8, {24, 40, 4});
  for (int64_t i = 0; i < cmyk.num_elements(); ++i) cmyk.data<uint8_t>()[i] = i % 4 == 3 ? 255 : 90;
  for (const std::string& jpg :
       {EncodeJpeg(rgb, {.progressive = true}), EncodeJpeg(rgb, {.h_samp = 1, .v_samp = 1}),
        EncodeJpeg(rgb, {.quality = 50, .h_samp = 2, .v_samp = 1}), EncodeJpeg(cmyk)}) {
    const Tensor out = DecodeJpeg(reinterpret_cast<const uint8_t*>(jpg.data()), jpg.size(), 3);
    EXPECT_EQ(out.shape(), (Shape{24, 40, 3}));
  }
  EXPECT_THROW(EncodeJpeg(rgb, {.quality = 0}), Error);
  EXPECT_THROW(EncodeJpeg(rgb, {.h_samp = 3}), Error);
  EXPECT_THROW(EncodeJpeg(Gradient(4, 4, 2)), Error);
}

TEST(PipelineOps, CorruptImagesAreDataLossNamingTheFeature) {
  std::string jpg = EncodeJpeg(Gradient(16, 16, 3));
  jpg.resize(jpg.size() / 3);
  Element e = WithFeature("img", Bytes(jpg));
  try {
    DecodeImage("img")(e, {});
    // libjpeg may decode a truncated file with a warning; then the image must still be whole.
    EXPECT_EQ(e.Get("img").shape(), (Shape{16, 16, 3}));
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kDataLoss);
  }
  std::string png = EncodePng(Gradient(16, 16, 3));
  png[png.size() / 2] ^= 0x55;
  Element p = WithFeature("img", Bytes(png));
  try {
    DecodeImage("img")(p, {});
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kDataLoss) << err.what();
    EXPECT_NE(std::string(err.what()).find("key=img"), std::string::npos) << err.what();
  }
  Element junk = WithFeature("img", Bytes("not an image"));
  EXPECT_THROW(DecodeImage("img")(junk, {}), Error);
}

TEST(PipelineOps, CropAndFlipMatchNaiveTwins) {
  const Tensor img = Gradient(9, 7, 3);
  const Tensor crop = CropImage(img, 2, 1, 4, 5);
  for (int64_t y = 0; y < 4; ++y)
    for (int64_t x = 0; x < 5; ++x)
      for (int64_t k = 0; k < 3; ++k)
        ASSERT_EQ(crop.data<uint8_t>()[(y * 5 + x) * 3 + k],
                  img.data<uint8_t>()[((y + 2) * 7 + x + 1) * 3 + k]);
  const Tensor flip = FlipLeftRight(img);
  for (int64_t y = 0; y < 9; ++y)
    for (int64_t x = 0; x < 7; ++x)
      for (int64_t k = 0; k < 3; ++k)
        ASSERT_EQ(flip.data<uint8_t>()[(y * 7 + x) * 3 + k],
                  img.data<uint8_t>()[(y * 7 + 6 - x) * 3 + k]);
}

TEST(PipelineOps, RandomOpsAreKeyedBySeedEpochAndElement) {
  auto crop = RandomCrop("image", 4, 4, 11);
  auto run = [&](int64_t id, int64_t epoch) {
    Element e = WithFeature("image", Gradient(10, 10, 1), id);
    crop(e, {.epoch = epoch});
    return std::vector<uint8_t>(e.Get("image").data<uint8_t>(),
                                e.Get("image").data<uint8_t>() + 16);
  };
  EXPECT_EQ(run(5, 0), run(5, 0));
  bool differs = false;
  for (int64_t id = 0; id < 10; ++id) differs = differs || run(id, 0) != run(id, 1);
  EXPECT_TRUE(differs);
  Element small = WithFeature("image", Gradient(3, 3, 1));
  EXPECT_THROW(crop(small, {}), Error);
  int flipped = 0;
  auto flip = RandomFlipLeftRight("image", 3);
  for (int64_t id = 0; id < 200; ++id) {
    Element e = WithFeature("image", Gradient(2, 3, 1), id);
    flip(e, {});
    flipped += e.Get("image").data<uint8_t>()[0] != Gradient(2, 3, 1).data<uint8_t>()[0];
  }
  EXPECT_NEAR(flipped, 100, 30);
}

TEST(PipelineOps, ResizeBilinear) {
  // Identity size keeps values; 2x2 -> 4x4 interpolates with half-pixel centres.
  const Tensor img = Gradient(5, 6, 2);
  const Tensor same = ResizeBilinear(img, 5, 6);
  for (int64_t i = 0; i < img.num_elements(); ++i) {
    ASSERT_FLOAT_EQ(same.data<float>()[i], img.data<uint8_t>()[i]);
  }
  Tensor two(DType::kFloat32, {2, 2, 1});
  float v[] = {0, 4, 8, 12};
  std::memcpy(two.raw_data(), v, sizeof(v));
  const Tensor up = ResizeBilinear(two, 4, 4);
  const float want_row0[] = {0, 1, 3, 4};
  for (int x = 0; x < 4; ++x) EXPECT_FLOAT_EQ(up.data<float>()[x], want_row0[x]);
  EXPECT_FLOAT_EQ(up.data<float>()[15], 12);
}

// The typed loops (uint8 by table, float32) give exactly (double(x) - mean) / stddev rounded
// to float, every channel, as the generic path does for other dtypes (int32 here).
TEST(PipelineOps, NormalizeTypedPathsEqualTheDoubleFormula) {
  const std::vector<float> mean = {123.675f, 116.28f, 103.53f}, sd = {58.395f, 57.12f, 57.375f};
  Tensor bytes(DType::kUInt8, {4, 23, 3}), floats(DType::kFloat32, {4, 23, 3}),
      ints(DType::kInt32, {4, 23, 3});
  for (int64_t i = 0; i < bytes.num_elements(); ++i) {
    bytes.data<uint8_t>()[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
    floats.data<float>()[i] = static_cast<float>(i % 256) + 0.37f * static_cast<float>(i % 7);
    ints.data<int32_t>()[i] = bytes.data<uint8_t>()[i];
  }
  for (const Tensor* in : {&bytes, &floats, &ints}) {
    Element e = WithFeature("image", *in);
    Normalize("image", mean, sd)(e, {});
    const float* got = e.Get("image").data<float>();
    for (int64_t i = 0; i < in->num_elements(); ++i) {
      const size_t k = static_cast<size_t>(i % 3);
      const double x = in->dtype() == DType::kFloat32 ? in->data<float>()[i]
                       : in->dtype() == DType::kUInt8 ? in->data<uint8_t>()[i]
                                                      : in->data<int32_t>()[i];
      ASSERT_EQ(got[i], static_cast<float>((x - mean[k]) / sd[k]))
          << DTypeName(in->dtype()) << " at " << i;
    }
  }
}

// normalize and random_flip write in place when the element alone holds the pixels (a crop's
// fresh output) and copy when anyone else does: the same values either way, and a tensor
// shared with the caller is never changed.
TEST(PipelineOps, InPlaceOnlyWhenTheElementAloneHoldsThePixels) {
  Tensor shared(DType::kFloat32, {3, 5, 3});
  for (int64_t i = 0; i < shared.num_elements(); ++i) shared.data<float>()[i] = 1.5f * i;
  const Tensor before = shared.Clone();
  auto same = [](const Tensor& a, const Tensor& b) {
    return a.shape() == b.shape() && std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
  };
  const MapFn normalize = Normalize("image", {1, 2, 3}, {2, 3, 4});
  Element copy = WithFeature("image", shared), alone = WithFeature("image", shared.Clone());
  EXPECT_FALSE(copy.Get("image").sole_owner());
  EXPECT_TRUE(alone.Get("image").sole_owner());
  normalize(copy, {});
  normalize(alone, {});
  EXPECT_TRUE(same(copy.Get("image"), alone.Get("image")));
  EXPECT_TRUE(same(shared, before));
  // Flipped or not by (seed, epoch, id): in place and copied alike.
  const MapFn flip = RandomFlipLeftRight("image", 1);
  int flipped = 0;
  for (int64_t id = 0; id < 6; ++id) {
    Element a = WithFeature("image", shared), b = WithFeature("image", shared.Clone());
    a.id = b.id = id;
    flip(a, {});
    flip(b, {});
    EXPECT_TRUE(same(a.Get("image"), b.Get("image"))) << id;
    if (!same(a.Get("image"), shared)) {
      EXPECT_TRUE(same(a.Get("image"), FlipLeftRight(shared))) << id;
      ++flipped;
    }
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, 6);
  EXPECT_TRUE(same(shared, before));
}

TEST(PipelineOps, NormalizeCastOneHotRawWindows) {
  Element e = WithFeature("image", Gradient(2, 2, 3));
  Normalize("image", {10, 20, 30}, {2, 4, 5})(e, {});
  const Tensor& n = e.Get("image");
  EXPECT_EQ(n.dtype(), DType::kFloat32);
  EXPECT_FLOAT_EQ(n.data<float>()[4], (Gradient(2, 2, 3).data<uint8_t>()[4] - 20.0f) / 4.0f);

  Element c = WithFeature("px", Gradient(1, 2, 1));
  CastAndScale("px", DType::kFloat32, 1.0 / 255)(c, {});
  EXPECT_FLOAT_EQ(c.Get("px").data<float>()[1], 5.0f / 255);

  Tensor label(DType::kInt64, {});
  *label.data<int64_t>() = 3;
  Element l = WithFeature("label", label);
  OneHot("label", 5)(l, {});
  EXPECT_EQ(l.Get("label").shape(), (Shape{5}));
  EXPECT_FLOAT_EQ(l.Get("label").data<float>()[3], 1.0f);
  *label.data<int64_t>() = 5;
  Element bad = WithFeature("label", label);
  EXPECT_THROW(OneHot("label", 5)(bad, {}), Error);

  float f[] = {1.5f, -2.0f, 3.25f, 4.0f};
  Element r = WithFeature("bytes", Bytes(std::string(reinterpret_cast<char*>(f), sizeof(f))));
  DecodeRaw("bytes", DType::kFloat32, {2, -1}, "x")(r, {});
  EXPECT_EQ(r.Get("x").shape(), (Shape{2, 2}));
  EXPECT_FLOAT_EQ(r.Get("x").data<float>()[2], 3.25f);
  EXPECT_THROW(DecodeRaw("bytes", DType::kFloat32, {3}, "x")(r, {}), Error);

  Tensor series(DType::kInt32, {7, 2});
  for (int i = 0; i < 14; ++i) series.data<int32_t>()[i] = i;
  Element s = WithFeature("s", series);
  SlidingWindows("s", 3, 2)(s, {});
  const Tensor& w = s.Get("s");
  ASSERT_EQ(w.shape(), (Shape{3, 3, 2}));  // windows start at 0, 2, 4
  EXPECT_EQ(w.data<int32_t>()[6], 4);      // window 1, step 0, channel 0 = series[2][0]
  Element shortest = WithFeature("s", Tensor(DType::kInt32, {2, 2}));
  SlidingWindows("s", 3, 1)(shortest, {});
  EXPECT_EQ(shortest.Get("s").dim(0), 0);
}

}  // namespace pipeline_ops_test
}  // namespace shardflow::pipeline
