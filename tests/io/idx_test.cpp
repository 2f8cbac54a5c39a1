// IDX reader/writer: the Debian Fashion-MNIST files, round trips of every type (plain and
// gzip), and truncated, oversized and mislabelled files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "io/idx.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::io {
namespace idx_test {

using ::testing::HasSubstr;
using testing::ScratchDir;

template <typename Fn>
Error ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorCode::kOk, "(no error)");
}

void WriteBytes(const std::filesystem::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> ReadBytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(IdxFashionMnist, CountsAndLabelHistograms) {
  if (!std::filesystem::exists(kFashionMnistDir)) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (" << kFashionMnistDir << ")";
  }
  for (auto [split, n] : {std::pair{"train", 60000}, std::pair{"t10k", 10000}}) {
    SCOPED_TRACE(split);
    const IdxImagesLabels data = ReadFashionMnist(split);
    EXPECT_EQ(data.images.shape(), (Shape{n, 28, 28}));
    EXPECT_EQ(data.labels.shape(), (Shape{n}));
    std::array<int64_t, 10> histogram{};
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t label = data.labels.data<uint8_t>()[i];
      ASSERT_LT(label, 10);
      ++histogram[label];
    }
    for (int c = 0; c < 10; ++c) EXPECT_EQ(histogram[static_cast<size_t>(c)], n / 10) << c;
  }
  const IdxHeader h = ReadIdxHeader(std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz");
  EXPECT_TRUE(h.gzipped);
  EXPECT_EQ(h.type_code, kIdxUInt8);
  EXPECT_EQ(h.file_bytes(), 16 + 10000 * 784);
}

// The first 1000 test images are also in the HDF5 fixture written by h5py: same pixel sum.
TEST(IdxFashionMnist, AgreesWithTheHdf5Fixture) {
  if (!std::filesystem::exists(kFashionMnistDir)) GTEST_SKIP() << "no Fashion-MNIST";
  const IdxImagesLabels data = ReadFashionMnist("t10k");
  int64_t pixels = 0;
  int64_t labels = 0;
  for (int64_t i = 0; i < 1000 * 784; ++i) pixels += data.images.data<uint8_t>()[i];
  for (int64_t i = 0; i < 1000; ++i) labels += data.labels.data<uint8_t>()[i];
  EXPECT_EQ(pixels, 58034149);
  EXPECT_EQ(labels, 4363);
}

template <typename T>
Tensor Ramp(Shape shape) {
  Tensor t(DTypeOf<T>(), shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.data<T>()[i] = static_cast<T>(DTypeOf<T>() == DType::kUInt8 ? i % 256 : i * 7 - 1000);
  }
  return t;
}

TEST(IdxRoundTrip, EveryTypePlainAndGzip) {
  ScratchDir dir("idx-roundtrip");
  const std::vector<Tensor> tensors = {Ramp<uint8_t>({5, 3, 2}), Ramp<int32_t>({300}),
                                       Ramp<float>({2, 2, 2, 2}), Ramp<double>({7, 1}),
                                       Ramp<uint8_t>({0, 28, 28})};
  for (bool gzip : {false, true}) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      std::string name = std::string("t").append(std::to_string(i));
      if (gzip) name += ".gz";
      const std::string path = (dir / name).string();
      WriteIdx(path, tensors[i], gzip);
      const Tensor back = ReadIdx(path);
      EXPECT_EQ(ReadIdxHeader(path).gzipped, gzip);
      ASSERT_EQ(back.dtype(), tensors[i].dtype());
      ASSERT_EQ(back.shape(), tensors[i].shape());
      EXPECT_EQ(0, std::memcmp(back.raw_data(), tensors[i].raw_data(), back.byte_size())) << path;
    }
  }
  // Big-endian on disk: the int32 300-element ramp starts 0xFFFFFC18 (-1000).
  const auto bytes = ReadBytes(dir / "t1");
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 12),
            (std::vector<uint8_t>{0, 0, 0x0C, 1, 0, 0, 1, 0x2C, 0xFF, 0xFF, 0xFC, 0x18}));
}

TEST(IdxRoundTrip, Int8AndInt16AreWidened) {
  ScratchDir dir("idx-widen");
  WriteBytes(dir / "i8", {0, 0, 0x09, 1, 0, 0, 0, 3, 0xFF, 0x7F, 0x80});
  WriteBytes(dir / "i16", {0, 0, 0x0B, 1, 0, 0, 0, 2, 0xFF, 0xFE, 0x01, 0x00});
  const Tensor a = ReadIdx((dir / "i8").string());
  ASSERT_EQ(a.dtype(), DType::kInt32);
  EXPECT_EQ(std::vector<int32_t>(a.data<int32_t>(), a.data<int32_t>() + 3),
            (std::vector<int32_t>{-1, 127, -128}));
  const Tensor b = ReadIdx((dir / "i16").string());
  EXPECT_EQ(std::vector<int32_t>(b.data<int32_t>(), b.data<int32_t>() + 2),
            (std::vector<int32_t>{-2, 256}));
}

TEST(IdxErrors, TruncatedPlainFileStatesBothSizes) {
  ScratchDir dir("idx-trunc");
  const auto path = dir / "images-idx3-ubyte";
  WriteIdx(path.string(), Ramp<uint8_t>({10, 28, 28}), false);
  std::filesystem::resize_file(path, 16 + 784 * 10 - 100);
  const Error e = ErrorOf([&] { ReadIdx(path.string()); });
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  EXPECT_THAT(e.what(), HasSubstr("truncated IDX file"));
  EXPECT_THAT(e.what(), HasSubstr("expected 7856 bytes, found 7756"));
  EXPECT_THAT(e.what(), HasSubstr(path.string()));
}

TEST(IdxErrors, TruncatedGzipFileStatesBothSizes) {
  ScratchDir dir("idx-trunc-gz");
  const auto path = dir / "images-idx3-ubyte.gz";
  WriteIdx(path.string(), Ramp<uint8_t>({100, 28, 28}), true);
  auto bytes = ReadBytes(path);
  bytes.resize(bytes.size() / 2);
  WriteBytes(path, bytes);
  const Error e = ErrorOf([&] { ReadIdx(path.string()); });
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  EXPECT_THAT(e.what(), HasSubstr("truncated IDX file"));
  EXPECT_THAT(e.what(), HasSubstr("expected 78416 bytes decompressed, found "));
  EXPECT_THAT(e.what(), HasSubstr(path.string()));
}

TEST(IdxErrors, OversizedFile) {
  ScratchDir dir("idx-long");
  const auto path = dir / "labels";
  WriteBytes(path, {0, 0, 8, 1, 0, 0, 0, 2, 1, 2, 3});
  EXPECT_THAT(
      ErrorOf([&] { ReadIdx(path.string()); }).what(),
      HasSubstr("oversized IDX file: header declares shape [2], expected 10 bytes, found 11"));
}

TEST(IdxErrors, WrongMagicAndTypeCode) {
  ScratchDir dir("idx-magic");
  WriteBytes(dir / "a", {0x1F, 0x00, 0x08, 0x01, 0, 0, 0, 0});
  WriteBytes(dir / "b", {0, 0, 0x07, 1, 0, 0, 0, 0});
  WriteBytes(dir / "c", {0, 0, 0x08, 0});
  WriteBytes(dir / "d", {0, 0});
  Error e = ErrorOf([&] { ReadIdx((dir / "a").string()); });
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  EXPECT_THAT(e.what(), HasSubstr("bad IDX magic number 0x1f000801"));
  EXPECT_THAT(e.what(), HasSubstr((dir / "a").string()));
  EXPECT_THAT(ErrorOf([&] { ReadIdx((dir / "b").string()); }).what(),
              HasSubstr("0x00000701: unknown element type code"));
  EXPECT_THAT(ErrorOf([&] { ReadIdx((dir / "c").string()); }).what(),
              HasSubstr("dimension count 0"));
  EXPECT_THAT(ErrorOf([&] { ReadIdx((dir / "d").string()); }).what(),
              HasSubstr("shorter than its 4-byte magic"));
}

TEST(IdxErrors, MissingFileAndMismatchedPair) {
  EXPECT_EQ(ErrorOf([] { ReadIdx("/no/such.idx"); }).code(), ErrorCode::kNotFound);
  ScratchDir dir("idx-pair");
  WriteIdx((dir / "img").string(), Ramp<uint8_t>({4, 2, 2}), false);
  WriteIdx((dir / "lab").string(), Ramp<uint8_t>({3}), true);
  const Error e =
      ErrorOf([&] { ReadIdxImagesLabels((dir / "img").string(), (dir / "lab").string()); });
  EXPECT_THAT(e.what(), HasSubstr("has 4 images but labels file"));
  EXPECT_THAT(e.what(), HasSubstr("has 3 labels"));
  EXPECT_THAT(ErrorOf([&] { ReadIdx((dir / "lab").string(), {.dtype = DType::kFloat32}); }).what(),
              HasSubstr("expected dtype float32, found uint8"));
}

}  // namespace idx_test
}  // namespace shardflow::io
