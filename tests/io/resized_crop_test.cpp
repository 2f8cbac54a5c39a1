// random_resized_crop and center_crop: torchvision's window rules, determinism by (seed,
// epoch, element), encoded JPEG/PNG bytes vs decoded images, spec errors, and the fused
// decode-and-crop in the real pipeline (images folders and TFRecord Examples).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "io/example.hpp"
#include "io/pipeline/counter_rng.hpp"
#include "io/pipeline/feature_spec.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/ops/resized_crop.hpp"
#include "io/pipeline/sources/source_counters.hpp"
#include "io/tfrecord_writer.hpp"
#include "jpeg_test_util.hpp"
#include "pipeline_test_util.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace resized_crop_test {

namespace jpeg = shardflow::testing::jpeg;
using testing::Drain;
using testing::WriteFile;

Tensor Bytes(const std::string& s) {
  Tensor t(DType::kUInt8, {static_cast<int64_t>(s.size())});
  std::memcpy(t.raw_data(), s.data(), s.size());
  return t;
}

Element With(Tensor t, int64_t id) {
  Element e;
  e.id = id;
  e.Set("image", std::move(t));
  return e;
}

bool Same(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

ImageWindow Draw(int64_t h, int64_t w, uint64_t seed, int64_t epoch, int64_t id,
                 const ResizedCropRange& range = {}) {
  CounterRng rng(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(id), kResizedCropStream);
  return RandomResizedCropWindow(h, w, range, rng);
}

TEST(ResizedCrop, WindowsAreKeyedBySeedEpochAndElementAndInsideTheImage) {
  EXPECT_EQ(Draw(200, 300, 7, 2, 41), Draw(200, 300, 7, 2, 41));
  int epoch_differs = 0, seed_differs = 0;
  for (int64_t id = 0; id < 50; ++id) {
    epoch_differs += !(Draw(200, 300, 7, 0, id) == Draw(200, 300, 7, 1, id));
    seed_differs += !(Draw(200, 300, 7, 0, id) == Draw(200, 300, 8, 0, id));
  }
  EXPECT_GT(epoch_differs, 45);
  EXPECT_GT(seed_differs, 45);
  for (auto [h, w] :
       {std::pair<int64_t, int64_t>{1, 1}, {1, 500}, {500, 1}, {3, 7}, {224, 224}, {333, 517}}) {
    for (int64_t id = 0; id < 300; ++id) {
      const ImageWindow win = Draw(h, w, 3, id % 3, id);
      ASSERT_GE(win.top, 0);
      ASSERT_GE(win.left, 0);
      ASSERT_GE(win.height, 1);
      ASSERT_GE(win.width, 1);
      ASSERT_LE(win.top + win.height, h) << h << "x" << w;
      ASSERT_LE(win.left + win.width, w) << h << "x" << w;
    }
  }
}

TEST(ResizedCrop, AreaAndRatioFollowTheRangesAndTheFallbackIsCentred) {
  const ResizedCropRange range{.min_scale = 0.25, .max_scale = 0.5};
  double sum = 0;
  const int n = 2000;
  for (int64_t id = 0; id < n; ++id) {
    const ImageWindow win = Draw(400, 600, 1, 0, id, range);
    const double area = static_cast<double>(win.height * win.width) / (400.0 * 600.0);
    const double ratio = static_cast<double>(win.width) / static_cast<double>(win.height);
    // Rounding of the sides moves the area and ratio by well under 2% at these sizes.
    ASSERT_GE(area, 0.25 * 0.98) << id;
    ASSERT_LE(area, 0.5 * 1.02) << id;
    ASSERT_GE(ratio, 0.75 * 0.98) << id;
    ASSERT_LE(ratio, (4.0 / 3.0) * 1.02) << id;
    sum += area;
  }
  EXPECT_NEAR(sum / n, 0.375, 0.02);  // uniform area fraction, nothing rejected
  // Ratios of 10..20 never fit a square image at half its area or more: the fallback is the
  // full-width window of ratio 10, centred.
  const ResizedCropRange wide{.min_scale = 0.5, .max_scale = 1, .min_ratio = 10, .max_ratio = 20};
  EXPECT_EQ(Draw(100, 100, 1, 0, 5, wide), (ImageWindow{45, 0, 10, 100}));
  const ResizedCropRange tall{
      .min_scale = 0.5, .max_scale = 1, .min_ratio = 0.05, .max_ratio = 0.1};
  EXPECT_EQ(Draw(100, 100, 1, 0, 5, tall), (ImageWindow{0, 45, 100, 10}));
  // No try fits a 10x3 image at its whole area with ratios 0.5..2 (w' = 4 at ratio 0.5): the
  // fallback clamps the image's ratio 0.3 to 0.5, the full-width window 6x3, centred.
  const ResizedCropRange whole{.min_scale = 1, .max_scale = 1, .min_ratio = 0.5, .max_ratio = 2};
  EXPECT_EQ(Draw(10, 3, 1, 0, 5, whole), (ImageWindow{2, 0, 6, 3}));
}

TEST(ResizedCrop, CenterCropWindow) {
  // timm's eval transform for 224 at crop_pct 0.875: the 256-pixel shorter side's centre 224.
  EXPECT_EQ(CenterCropWindow(256, 320, 224, 224, 0.875), (ImageWindow{16, 48, 224, 224}));
  EXPECT_EQ(CenterCropWindow(100, 50, 10, 20, 1.0), (ImageWindow{37, 0, 25, 50}));
  EXPECT_EQ(CenterCropWindow(1, 1, 224, 224, 0.875), (ImageWindow{0, 0, 1, 1}));
}

TEST(ResizedCrop, SameOutputOnAnyThreadInAnyOrder) {
  auto op = RandomResizedCrop("image", 16, 12, {}, 99);
  const Tensor image = jpeg::Noise(61, 83, 3, 1);
  std::vector<Tensor> want(40);
  for (int64_t id = 0; id < 40; ++id) {
    Element e = With(image, id);
    op(e, {.epoch = 3});
    want[id] = e.Get("image");
    ASSERT_EQ(want[id].shape(), (Shape{16, 12, 3}));
    ASSERT_EQ(want[id].dtype(), DType::kFloat32);
  }
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int64_t i = 39; i >= 0; --i) {
        const int64_t id = (i * 7 + t) % 40;
        Element e = With(image, id);
        op(e, {.epoch = 3});
        mismatches += !Same(e.Get("image"), want[id]);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(ResizedCrop, EncodedBytesGiveTheDecodedImagesResult) {
  // Windows < 2x the output: no DCT scaling, so fused equals decode-then-crop exactly.
  const std::string jpg = jpeg::Encode(jpeg::Noise(45, 70, 3, 2), {.h_samp = 2, .v_samp = 2});
  const std::string png = EncodePng(jpeg::Noise(45, 70, 3, 2));
  for (int channels : {0, 1, 3}) {
    for (const std::string* bytes : {&jpg, &png}) {
      const Tensor decoded = DecodeImageBytes(jpeg::Data(*bytes), bytes->size(), channels);
      for (MapFn op : {RandomResizedCrop("image", 24, 40, {}, 5, channels),
                       CenterCrop("image", 30, 30, 0.875, channels)}) {
        for (int64_t id = 0; id < 20; ++id) {
          Element a = With(decoded, id), b = With(Bytes(*bytes), id);
          op(a, {.epoch = 1});
          op(b, {.epoch = 1});
          ASSERT_TRUE(Same(a.Get("image"), b.Get("image"))) << channels << " id " << id;
        }
      }
    }
  }
}

TEST(ResizedCrop, DamagedBytesAreDataLossNamingTheFeature) {
  const std::string good = jpeg::Encode(jpeg::Noise(64, 48, 3, 9));
  std::string bad_header = good;
  const size_t sof = bad_header.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  bad_header[sof + 5] = bad_header[sof + 6] = 0;
  for (const std::string& bytes : {good.substr(0, good.size() / 3), bad_header,
                                   std::string("\xFF\xD8\xFF garbage"), std::string("junk")}) {
    for (MapFn op : {RandomResizedCrop("img", 8, 8, {}, 1), CenterCrop("img", 8, 8, 1.0)}) {
      Element e;
      e.Set("img", Bytes(bytes));
      try {
        op(e, {});
        FAIL() << "expected data loss for " << bytes.size() << " bytes";
      } catch (const Error& err) {
        EXPECT_EQ(err.code(), ErrorCode::kDataLoss) << err.what();
        EXPECT_EQ(err.context().key, "img") << err.what();
      }
    }
  }
  Element floats;
  floats.Set("img", Tensor(DType::kFloat32, {5}));
  EXPECT_THROW(CenterCrop("img", 8, 8)(floats, {}), Error);
}

TEST(ResizedCrop, SpecsParseAndBadSpecsNameTheKey) {
  for (const char* spec :
       {"random_resized_crop:224x224", "random_resized_crop:8x8:0.5,1",
        "random_resized_crop:8x8:0.08,1:0.5,2", "center_crop:7x9", "center_crop:7x9:1"}) {
    EXPECT_TRUE(static_cast<bool>(ParseAugmentation(spec, "image", 1))) << spec;
  }
  for (const char* spec :
       {"random_resized_crop:0x5", "random_resized_crop:5",
        "random_resized_crop:", "random_resized_crop:8x8:0.9,0.1", "random_resized_crop:8x8:0,1",
        "random_resized_crop:8x8:0.5,1.5", "random_resized_crop:8x8:0.5,1:2,1",
        "random_resized_crop:8x8:0.5,1:1", "random_resized_crop:8x8:0.5,1:0.75,1.33:x",
        "center_crop:0x4", "center_crop:8x8:1.5", "center_crop:8x8:0", "center_crop:8x8:a",
        "center_crop:8x8:0.5:1", "random_resized_crops:8x8"}) {
    try {
      ParseAugmentation(spec, "image", 1);
      ADD_FAILURE() << "accepted " << spec;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << spec;
      EXPECT_EQ(e.context().key, "augmentations") << spec << ": " << e.what();
    }
  }
  // The defaults written out give the default crops.
  const MapFn implicit = ParseAugmentation("random_resized_crop:8x8", "image", 4);
  const MapFn written =
      ParseAugmentation("random_resized_crop:8x8:0.08,1:0.75,1.3333333333333333", "image", 4);
  for (int64_t id = 0; id < 200; ++id) {
    Element a = With(jpeg::Noise(31, 57, 1, 1), id), b = With(jpeg::Noise(31, 57, 1, 1), id);
    implicit(a, {});
    written(b, {});
    ASSERT_TRUE(Same(a.Get("image"), b.Get("image"))) << id;
  }
  DataOptions o;
  o.augmentations = {"random_resized_crop:8x8", "random_flip"};
  EXPECT_TRUE(FusesDecodeAndCrop(o));
  o.fuse_decode_crop = false;
  EXPECT_FALSE(FusesDecodeAndCrop(o));
  o.fuse_decode_crop = true;
  o.augmentations = {"random_flip", "center_crop:8x8"};
  EXPECT_FALSE(FusesDecodeAndCrop(o));
}

// Runs the pipeline of `spec` once with fusion and once without; the batches must be equal
// (windows < 2x the output: no DCT scaling) and the fused run's decode must leave the JPEGs
// encoded (seen by check_example, which runs between decode and augmentations).
// How many images reached check_example with rank 1 (encoded bytes), 3 (decoded) or another
// (of[0]); counted from the map threads, so atomically.
struct RankCounts {
  std::atomic<int64_t> of[4] = {0, 0, 0, 0};
};

MapFn CountRanks(std::shared_ptr<RankCounts> counts) {
  return [counts](Element& e, const MapContext&) {
    const int64_t r = e.Get("image").rank();
    counts->of[r == 1 || r == 3 ? r : 0].fetch_add(1);
  };
}

void ExpectFusedEqualsUnfused(InputSpec spec) {
  std::vector<std::vector<Element>> runs;
  for (bool fuse : {true, false}) {
    spec.data.fuse_decode_crop = fuse;
    auto ranks = std::make_shared<RankCounts>();
    spec.check_example = CountRanks(ranks);
    runs.push_back(Drain(BuildInputPipeline(spec, 0, 1)));
    EXPECT_GT(ranks->of[fuse ? 1 : 3].load(), 0) << "fuse " << fuse;
    EXPECT_EQ(ranks->of[fuse ? 3 : 1].load(), 0) << "fuse " << fuse;
    EXPECT_EQ(ranks->of[0].load(), 0) << "fuse " << fuse;
  }
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t b = 0; b < runs[0].size(); ++b) {
    EXPECT_EQ(runs[0][b].Get("image").shape(),
              (Shape{static_cast<int64_t>(runs[0][b].Get("label").dim(0)), 24, 20, 3}));
    EXPECT_TRUE(Same(runs[0][b].Get("image"), runs[1][b].Get("image"))) << "batch " << b;
    EXPECT_TRUE(Same(runs[0][b].Get("label"), runs[1][b].Get("label"))) << "batch " << b;
  }
}

InputSpec BaseSpec() {
  InputSpec spec;
  spec.data.shuffle_buffer = 0;
  spec.data.batch_size = 4;
  spec.data.parallel_calls = 2;
  spec.data.seed = 17;
  spec.data.augmentations = {"random_resized_crop:24x20", "random_flip"};
  return spec;
}

TEST(ResizedCrop, FusedIntoTheImagesSourceDecode) {
  shardflow::testing::ScratchDir dir("resized_crop_images");
  for (int i = 0; i < 6; ++i) {
    const std::string cls = i % 2 ? "a" : "b";
    std::filesystem::create_directories(dir / cls);
    const Tensor img = jpeg::Noise(40 + i, 38, 3, static_cast<uint32_t>(i));
    // One PNG among the JPEGs: decoded by the source even when fused.
    WriteFile((dir / cls / ("x" + std::to_string(i) + (i == 3 ? ".png" : ".jpg"))).string(),
              i == 3 ? EncodePng(img) : jpeg::Encode(img));
  }
  InputSpec spec = BaseSpec();
  spec.data.format = "images";
  spec.format.root = dir.path().string();
  spec.format.channels = 3;
  spec.data.fuse_decode_crop = true;
  // The PNG arrives decoded (rank 3): check ranks per format below instead of all-rank-1.
  auto ranks = std::make_shared<RankCounts>();
  spec.check_example = CountRanks(ranks);
  Drain(BuildInputPipeline(spec, 0, 1));
  EXPECT_EQ(ranks->of[1].load(), 5);
  EXPECT_EQ(ranks->of[3].load(), 1);
  std::vector<Element> fused = Drain(BuildInputPipeline(spec, 0, 1));
  spec.data.fuse_decode_crop = false;
  std::vector<Element> plain = Drain(BuildInputPipeline(spec, 0, 1));
  ASSERT_EQ(fused.size(), plain.size());
  for (size_t b = 0; b < fused.size(); ++b) {
    EXPECT_TRUE(Same(fused[b].Get("image"), plain[b].Get("image"))) << b;
  }
}

// dir/NAME with n Examples: "image" bytes(i), "label" i.
std::string WriteExamples(const shardflow::testing::ScratchDir& dir, const std::string& name, int n,
                          const std::function<std::string(int)>& bytes) {
  const std::string path = (dir / name).string();
  io::TFRecordWriter writer(path);
  for (int i = 0; i < n; ++i) {
    io::ExampleBuilder ex;
    ex.AddBytes("image", {bytes(i)});
    ex.AddInt64("label", {i});
    writer.Write(ex.Serialize());
  }
  return path;
}

// dir/images.tfrecord with 7 Examples: "image" the JPEG of image(i), "label" i.
std::string WriteJpegExamples(const shardflow::testing::ScratchDir& dir,
                              const std::function<Tensor(int)>& image) {
  return WriteExamples(dir, "images.tfrecord", 7, [&](int i) { return jpeg::Encode(image(i)); });
}

// `jpeg` with an APP1 Exif segment after its SOI: a little-endian TIFF header and one IFD entry,
// Orientation (0x0112, SHORT) = `orientation` (6: the camera was turned 90 degrees).
std::string WithExifOrientation(const std::string& jpeg, char orientation) {
  const std::string tiff = std::string("II*\0\x08\0\0\0", 8) + std::string("\x01\0", 2) +
                           std::string("\x12\x01\x03\0\x01\0\0\0", 8) + orientation +
                           std::string("\0\0\0\0\0\0\0", 7);
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  const size_t length = payload.size() + 2;
  std::string segment = "\xFF\xE1";
  segment += static_cast<char>(length >> 8);
  segment += static_cast<char>(length & 0xFF);
  return jpeg.substr(0, 2) + segment + payload + jpeg.substr(2);
}

TEST(ResizedCrop, FusedIntoTheExampleDecode) {
  shardflow::testing::ScratchDir dir("resized_crop_tfrecord");
  const std::string path = WriteJpegExamples(
      dir, [](int i) { return jpeg::Noise(36, 30, 3, static_cast<uint32_t>(i)); });
  InputSpec spec = BaseSpec();
  spec.data.format = "tfrecord";
  spec.data.files = {path};
  spec.features = {"image:image:uint8:36x30x3", "label:int64:int64:scalar"};
  ExpectFusedEqualsUnfused(spec);
  // The schema's shape is still checked, from the header.
  spec.features = {"image:image:uint8:36x31x3", "label:int64:int64:scalar"};
  spec.data.fuse_decode_crop = true;
  spec.check_example = {};
  try {
    Drain(BuildInputPipeline(spec, 0, 1));
    FAIL() << "expected a shape error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_NE(std::string(e.what()).find("decoded to [36,30,3], not the schema's 36x31x3"),
              std::string::npos)
        << e.what();
  }
}

// Variable-size JPEGs (ImageNet's case) under "*x*x3": fused equals unfused; without a crop or
// resize the spec is refused, naming the feature.
TEST(ResizedCrop, ImagesOfAnySizeFromExamples) {
  shardflow::testing::ScratchDir dir("resized_crop_any_size");
  // Windows stay under 2x the 24x20 output: no DCT scaling.
  const std::string path = WriteJpegExamples(
      dir, [](int i) { return jpeg::Noise(30 + 3 * i, 38 - 2 * i, 3, static_cast<uint32_t>(i)); });
  InputSpec spec = BaseSpec();
  spec.data.format = "tfrecord";
  spec.data.files = {path};
  spec.features = {"image:image:uint8:*x*x3", "label:int64:int64:scalar"};
  ExpectFusedEqualsUnfused(spec);
  spec.check_example = {};
  spec.data.augmentations = {"random_flip"};
  try {
    BuildInputPipeline(spec, 0, 1);
    FAIL() << "built a pipeline that batches images of any size";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_EQ(e.context().key, "data.augmentations") << e.what();
    EXPECT_NE(std::string(e.what()).find("image feature 'image' has any size (*x*x3)"),
              std::string::npos)
        << e.what();
  }
  // '*' is for an image's height and width only.
  for (const char* bad : {"x:bytes:uint8:*x3", "image:image:uint8:*x*x*", "n:int64:int64:*"}) {
    EXPECT_THROW(ParseFeatureSpec(bad), Error) << bad;
  }
  EXPECT_EQ(ParseFeatureSpec("image:image:uint8:*x224x3").shape, (Shape{io::kAnySize, 224, 3}));
  EXPECT_EQ(io::SpecShapeText({io::kAnySize, io::kAnySize, 1}), "*x*x1");
  EXPECT_TRUE(io::ShapeMatches({5, 7, 3}, {io::kAnySize, 7, 3}));
  EXPECT_FALSE(io::ShapeMatches({5, 7, 1}, {io::kAnySize, 7, 3}));
  EXPECT_FALSE(io::ShapeMatches({5, 7}, {io::kAnySize, 7, 3}));
}

// A config list splits at every comma; the numbers of one augmentation are joined again.
TEST(ResizedCrop, ConfigListCommasInsideAnAugmentationAreRejoined) {
  EXPECT_EQ(JoinAugmentationArgs({"random_resized_crop:8x8:0.5", "1", " random_flip",
                                  "normalize:1.5", "2", "3/4", "5", " 6.5", "scale:2"}),
            (std::vector<std::string>{"random_resized_crop:8x8:0.5,1", " random_flip",
                                      "normalize:1.5,2,3/4,5,6.5", "scale:2"}));
  EXPECT_EQ(JoinAugmentationArgs({"random_flip", "-1"}),
            (std::vector<std::string>{"random_flip,-1"}));  // then refused as a bad spec
}

// The JPEGs an ImageNet-sized corpus holds besides baseline 4:2:0 RGB: progressive, greyscale,
// CMYK (Adobe), 4:4:4, and an EXIF orientation tag (ignored, as tf.image's and torchvision's
// decoders ignore it: the stored pixels, not rotated). Fused equals unfused on each; a JPEG cut
// short stops the pipeline with data loss naming the file.
TEST(ResizedCrop, TheJpegsOfTheWildThroughTheFusedPipeline) {
  shardflow::testing::ScratchDir dir("resized_crop_wild");
  const auto wild = [](int i) -> std::string {
    const auto seed = static_cast<uint32_t>(i);
    switch (i % 5) {
      case 0:
        return jpeg::Encode(jpeg::Noise(36, 30, 3, seed), {.progressive = true});
      case 1:
        return jpeg::Encode(jpeg::Noise(34, 31, 1, seed));
      case 2:
        return jpeg::Encode(jpeg::Noise(35, 29, 4, seed));
      case 3:
        return jpeg::Encode(jpeg::Noise(33, 32, 3, seed), {.h_samp = 1, .v_samp = 1});
      default:
        return WithExifOrientation(jpeg::Encode(jpeg::Noise(30, 37, 3, seed)), 6);
    }
  };
  InputSpec spec = BaseSpec();
  spec.data.format = "tfrecord";
  spec.data.files = {WriteExamples(dir, "wild.tfrecord", 10, wild)};
  spec.features = {"image:image:uint8:*x*x3", "label:int64:int64:scalar"};
  ExpectFusedEqualsUnfused(spec);
  const std::string exif = wild(4), plain = jpeg::Encode(jpeg::Noise(30, 37, 3, 4));
  const Tensor a = DecodeJpeg(jpeg::Data(exif), exif.size(), 3);
  const Tensor b = DecodeJpeg(jpeg::Data(plain), plain.size(), 3);
  ASSERT_EQ(a.shape(), (Shape{30, 37, 3}));
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), b.byte_size()), 0);

  spec.data.files = {WriteExamples(dir, "cut.tfrecord", 3, [&](int i) {
    const std::string whole = wild(i);
    return i == 2 ? whole.substr(0, whole.size() / 2) : whole;
  })};
  spec.check_example = {};
  for (bool fuse : {true, false}) {
    spec.data.fuse_decode_crop = fuse;
    try {
      Drain(BuildInputPipeline(spec, 0, 1));
      ADD_FAILURE() << "a truncated JPEG passed, fuse " << fuse;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
      EXPECT_NE(std::string(e.what()).find("cut.tfrecord"), std::string::npos) << e.what();
    }
  }
}

// data.on_corrupt = skip (TFRecord) and on_error = skip (images): a JPEG cut short or with
// garbage after its header is dropped from its batch and counted once (over several epochs),
// fused or not, for 1 and 3 map threads; the other images arrive as without it.
TEST(ResizedCrop, CorruptJpegsAreSkippedAndCountedUnderSkip) {
  shardflow::testing::ScratchDir dir("resized_crop_skip");
  const auto image = [](int i) { return jpeg::Encode(jpeg::Noise(36, 30, 3, uint32_t(i))); };
  const auto damaged = [&](int i) {
    std::string bytes = image(i);
    // (The same lengths as the clean file's, so every record keeps its offset: crops are
    // keyed by it.) Cut short: the second half zeros, the end-of-image marker gone.
    if (i == 2) std::fill(bytes.begin() + static_cast<int64_t>(bytes.size()) / 2, bytes.end(), 0);
    if (i == 5)
      std::fill(bytes.begin() + static_cast<int64_t>(bytes.size()) / 3, bytes.end() - 2, 'x');
    return bytes;
  };
  InputSpec spec = BaseSpec();
  spec.data.format = "tfrecord";
  spec.data.files = {WriteExamples(dir, "skip.tfrecord", 10, damaged)};
  spec.features = {"image:image:uint8:*x*x3", "label:int64:int64:scalar"};
  spec.on_corrupt = "skip";
  spec.data.epochs = 2;
  InputSpec clean = spec;
  clean.data.files = {WriteExamples(dir, "clean.tfrecord", 10, image)};
  clean.on_corrupt = "fail";
  const std::vector<Element> whole = Drain(BuildInputPipeline(clean, 0, 1));
  ASSERT_EQ(whole.size(), 5u);  // 2 passes of 10, batches of 4
  for (bool fuse : {true, false}) {
    for (int calls : {1, 3}) {
      SCOPED_TRACE(std::to_string(fuse) + " " + std::to_string(calls));
      spec.data.fuse_decode_crop = clean.data.fuse_decode_crop = fuse;
      spec.data.parallel_calls = calls;
      const int64_t before = DistinctSkippedRecords();
      const std::vector<Element> got = Drain(BuildInputPipeline(spec, 0, 1));
      ASSERT_EQ(got.size(), whole.size());
      const std::vector<int64_t> rows = {3, 3, 4, 2, 4};  // labels 2 and 5 left out
      for (size_t b = 0; b < got.size(); ++b) {
        ASSERT_EQ(got[b].Get("label").dim(0), rows[b]) << "batch " << b;
        // The kept rows equal the clean run's rows of the same labels (crops keyed by element).
        const Tensor& img = got[b].Get("image");
        const int64_t row = img.byte_size() / static_cast<size_t>(rows[b]);
        int64_t r = 0;
        for (int64_t w = 0; w < whole[b].Get("label").dim(0); ++w) {
          const int64_t label = whole[b].Get("label").data<int64_t>()[w];
          if (label == 2 || label == 5) continue;
          EXPECT_EQ(got[b].Get("label").data<int64_t>()[r], label);
          EXPECT_EQ(
              std::memcmp(static_cast<const char*>(img.raw_data()) + r * row,
                          static_cast<const char*>(whole[b].Get("image").raw_data()) + w * row,
                          static_cast<size_t>(row)),
              0)
              << "batch " << b << " label " << label;
          ++r;
        }
      }
      // Counted once per record however many passes and pipelines met it (the first run
      // counts 2).
      EXPECT_EQ(DistinctSkippedRecords() - before, fuse && calls == 1 ? 2 : 0);
    }
  }
  // The images format: a truncated JPEG is skipped by the fused crop (header intact).
  const auto truncated = [&](int i) {
    const std::string bytes = damaged(i);
    return i == 2 ? image(i).substr(0, bytes.size() / 2) : bytes;
  };
  std::filesystem::create_directories(dir / "root" / "a");
  for (int i = 0; i < 5; ++i) {
    WriteFile((dir / "root" / "a" / ("x" + std::to_string(i) + ".jpg")).string(), truncated(i));
  }
  InputSpec images = BaseSpec();
  images.data.format = "images";
  images.format.root = (dir / "root").string();
  images.format.channels = 3;
  images.format.on_error = "skip";
  const std::vector<Element> folder = Drain(BuildInputPipeline(images, 0, 1));
  ASSERT_EQ(folder.size(), 2u);
  EXPECT_EQ(folder[0].Get("label").dim(0) + folder[1].Get("label").dim(0), 4);
}

TEST(ResizedCrop, EvaluationUsesTheCentreCropAndNoRandomness) {
  EXPECT_EQ(
      EvaluationAugmentations({"random_resized_crop:224x200:0.5,1:0.9,1.1", "random_flip",
                               "random_crop:8x8", "normalize:1,2,3/4,5,6", "scale:0.5"}),
      (std::vector<std::string>{"center_crop:224x200", "normalize:1,2,3/4,5,6", "scale:0.5"}));
  EXPECT_EQ(EvaluationAugmentations({"resize:9x9", "center_crop:8x8:1"}),
            (std::vector<std::string>{"resize:9x9", "center_crop:8x8:1"}));
  EXPECT_TRUE(SizesImages({"random_flip", "resize:3x3"}));
  EXPECT_TRUE(SizesImages({"random_crop:3x3"}));
  EXPECT_FALSE(SizesImages({"random_flip", "normalize:1/2"}));
}

}  // namespace resized_crop_test
}  // namespace shardflow::pipeline
