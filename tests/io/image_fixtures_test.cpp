// Image decoding against files written and decoded by Pillow (tests/fixtures/images, see its
// make_images.py): palette PNG as RGB(A), 16-bit PNG scaled linearly (v >> 8), one grey formula
// (tf.image.rgb_to_grayscale) for PNG and JPEG, alpha dropped for 3 channels, and a truncated
// JPEG refused as corrupt data (issue 28, items 1-4). Exact equality: expected values are Pillow's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/sources/image_folder_source.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace image_fixtures_test {

std::filesystem::path ImagesDir() { return shardflow::testing::FixturesDir() / "images"; }

std::string ReadBytes(const std::string& name) {
  std::ifstream in(ImagesDir() / name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// NAME.cN.txt: "H W C", then the values row-major.
Tensor Expected(const std::string& name, int channels) {
  std::ifstream in(ImagesDir() / (name + ".c" + std::to_string(channels) + ".txt"));
  EXPECT_TRUE(in.good()) << name << " c" << channels;
  int64_t h = 0, w = 0, c = 0;
  in >> h >> w >> c;
  Tensor t(DType::kUInt8, {h, w, c});
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    int v = -1;
    in >> v;
    t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
  EXPECT_FALSE(in.fail()) << name;
  return t;
}

Tensor Decode(const std::string& name, int channels) {
  const std::string bytes = ReadBytes(name);
  return DecodeImageBytes(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), channels);
}

// Equal shapes and values; on a mismatch names the first differing value and the largest gap.
void ExpectPixels(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(ShapeToString(got.shape()), ShapeToString(want.shape())) << what;
  int64_t first = -1, worst = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const int a = got.data<uint8_t>()[i], b = want.data<uint8_t>()[i];
    if (a != b && first < 0) first = i;
    worst = std::max<int64_t>(worst, std::abs(a - b));
  }
  EXPECT_EQ(first, -1) << what << ": first difference at value " << first << ": got "
                       << int(got.data<uint8_t>()[std::max<int64_t>(first, 0)]) << ", Pillow "
                       << int(want.data<uint8_t>()[std::max<int64_t>(first, 0)])
                       << "; largest difference " << worst;
}

TEST(ImageFixtures, JpegMatchesPillowAndATruncatedJpegIsDataLoss) {
  ExpectPixels(Decode("photo.jpg", 3), Expected("photo.jpg", 3), "photo.jpg c3");
  ExpectPixels(Decode("photo.jpg", 0), Expected("photo.jpg", 3), "photo.jpg c0");
  const std::string bytes = ReadBytes("photo.jpg");
  const std::string cut = bytes.substr(0, bytes.size() * 85 / 100);
  for (int channels : {0, 1, 3}) {
    try {
      DecodeJpeg(reinterpret_cast<const uint8_t*>(cut.data()), cut.size(), channels);
      ADD_FAILURE() << "a JPEG cut to 85% of its bytes decoded (channels " << channels << ")";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
      EXPECT_NE(std::string(e.what()).find("Premature end of JPEG file"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ImageFixtures, PaletteAsStoredIsRgbOrRgba) {
  ExpectPixels(Decode("palette.png", 0), Expected("palette.png", 0), "palette.png c0");
  ExpectPixels(Decode("palette.png", 3), Expected("palette.png", 0), "palette.png c3");
  ExpectPixels(Decode("palette-alpha.png", 0), Expected("palette-alpha.png", 0),
               "palette-alpha.png c0");
  ExpectPixels(Decode("palette-alpha.png", 4), Expected("palette-alpha.png", 0),
               "palette-alpha.png c4");
}

TEST(ImageFixtures, SixteenBitPngIsScaledLinearly) {
  ExpectPixels(Decode("grey16.png", 0), Expected("grey16.png", 0), "grey16.png c0");
  ExpectPixels(Decode("grey16.png", 1), Expected("grey16.png", 0), "grey16.png c1");
}

TEST(ImageFixtures, OneGreyFormulaForPngAndJpegAndAlphaIsDropped) {
  // photo.png holds Pillow's RGB decode of photo.jpg: the same pixels in both formats.
  ExpectPixels(Decode("photo.png", 3), Expected("photo.jpg", 3), "photo.png c3");
  ExpectPixels(Decode("photo.jpg", 1), Expected("photo.jpg", 1), "photo.jpg c1");
  ExpectPixels(Decode("photo.png", 1), Expected("photo.jpg", 1), "photo.png c1");
  ExpectPixels(Decode("palette.png", 1), Expected("palette.png", 1), "palette.png c1");
  ExpectPixels(Decode("rgba.png", 0), Expected("rgba.png", 0), "rgba.png c0");
  ExpectPixels(Decode("rgba.png", 3), Expected("rgba.png", 3), "rgba.png c3");
  ExpectPixels(Decode("rgba.png", 1), Expected("rgba.png", 1), "rgba.png c1");
}

// A truncated JPEG in an image folder fails the read (kDataLoss naming the file) or, with
// on_error = skip, is skipped and counted.
TEST(ImageFixtures, TruncatedJpegInAFolderFailsOrIsSkipped) {
  shardflow::testing::ScratchDir dir("images_truncated_jpeg");
  std::filesystem::create_directories(dir / "root/a");
  const std::string bytes = ReadBytes("photo.jpg");
  testing::WriteFile((dir / "root/a/full.jpg").string(), bytes);
  testing::WriteFile((dir / "root/a/cut.jpg").string(), bytes.substr(0, bytes.size() * 85 / 100));
  auto failing = OpenImageFolderSource({.root = (dir / "root").string()});
  ShardPlan plan = PlanShards(failing->Files(), false, ShardPolicy::kFile, 1, 0);
  ErrorCode code{};
  const std::string text =
      testing::ErrorText([&] { testing::Drain(Dataset::FromRecordSource(failing, plan)); }, &code);
  EXPECT_EQ(code, ErrorCode::kDataLoss);
  testing::ExpectHas(text, "cut.jpg");
  auto skipping = std::make_shared<ImageFolderSource>(
      ImageFolderOptions{.root = (dir / "root").string(), .on_error = OnError::kSkip});
  EXPECT_EQ(testing::Drain(Dataset::FromRecordSource(skipping, plan)).size(), 1u);
  EXPECT_EQ(skipping->counters().skipped_records.load(), 1);
}

}  // namespace image_fixtures_test
}  // namespace shardflow::pipeline
