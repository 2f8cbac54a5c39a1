// Groups, attributes, string datasets, checksummed datasets and flat-range writes on one rank:
// FlatRangeBlocks against a naive element-by-element twin, and round trips through h5 files.
#include "io/hdf5/objects.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "tests/support/test_paths.hpp"

namespace shardflow::io {
namespace hdf5_objects_test {

using ::testing::HasSubstr;

// The flat indices a list of blocks selects, in row-major order of the blocks' elements.
std::vector<int64_t> Elements(const std::vector<hsize_t>& dims, const std::vector<Hdf5Block>& bs) {
  std::vector<int64_t> out;
  for (const Hdf5Block& b : bs) {
    std::vector<hsize_t> idx(dims.size(), 0);
    while (true) {
      int64_t flat = 0;
      for (size_t d = 0; d < dims.size(); ++d) {
        flat = flat * static_cast<int64_t>(dims[d]) + static_cast<int64_t>(b.start[d] + idx[d]);
      }
      out.push_back(flat);
      size_t d = dims.size();
      while (d > 0 && ++idx[d - 1] == b.count[d - 1]) idx[--d] = 0;
      if (d == 0) break;
    }
  }
  return out;
}

TEST(FlatRangeBlocks, EveryRangeOfSeveralShapesMatchesTheNaiveTwin) {
  const std::vector<std::vector<hsize_t>> shapes = {
      {7}, {3, 4}, {2, 3, 4}, {3, 1, 5}, {2, 2, 2, 3}};
  for (const auto& dims : shapes) {
    const int64_t n =
        std::accumulate(dims.begin(), dims.end(), int64_t{1},
                        [](int64_t a, hsize_t b) { return a * static_cast<int64_t>(b); });
    for (int64_t b = 0; b <= n; ++b) {
      for (int64_t e = b; e <= n; ++e) {
        const auto blocks = FlatRangeBlocks(dims, {b, e});
        std::vector<int64_t> want(static_cast<size_t>(e - b));
        std::iota(want.begin(), want.end(), b);
        ASSERT_EQ(Elements(dims, blocks), want)
            << "range [" << b << "," << e << ") rank " << dims.size();
        EXPECT_LE(blocks.size(), 2 * dims.size() - 1);
      }
    }
  }
  EXPECT_TRUE(FlatRangeBlocks({0, 3}, {0, 0}).empty());
  EXPECT_EQ(FlatRangeBlocks({}, {0, 1}).size(), 1u);  // a scalar
}

TEST(Hdf5Objects, FlatRangesAttributesAndStringsRoundTrip) {
  testing::ScratchDir dir("hdf5_objects");
  const std::string path = (dir.path() / "o.h5").string();
  std::vector<float> source(2 * 3 * 4);
  std::iota(source.begin(), source.end(), 1.0f);
  {
    Hdf5File file = Hdf5File::Create(path, SelfCommunicator(), {.checksummed_metadata = true});
    H5Id d = CreateChecksummedDataset(file, "/g/sub/x", H5T_NATIVE_FLOAT, {2, 3, 4}, 1 << 20);
    // Ranges cutting rows in the middle; elements outside them stay at the fill value 0.
    WriteFlatRanges(file, d.get(), "/g/sub/x", H5T_NATIVE_FLOAT, source.data(),
                    {{1, 6}, {6, 7}, {13, 23}});
    H5Id empty = CreateChecksummedDataset(file, "/e", H5T_NATIVE_UINT8, {0}, 1 << 20);
    CreateGroup(file, "/h");
    WriteAttribute(file, "/h", "n", int64_t{-5});
    WriteAttribute(file, "/", "s", std::string("text"));
    WriteAttribute(file, "/", "empty", std::string());
    WriteStringDataset(file, "/cfg", "a\nb");
    EXPECT_TRUE(file.HasLink("/g/sub"));
    EXPECT_FALSE(file.HasLink("/g/none/x"));
    EXPECT_THROW(WriteFlatRanges(file, d.get(), "/g/sub/x", H5T_NATIVE_FLOAT, source.data(),
                                 {{5, 9}, {8, 10}}),
                 Error);
    d.Reset();
    empty.Reset();
    file.Close();
  }
  Hdf5File file = Hdf5File::Open(path, SelfCommunicator());
  const Hdf5DatasetInfo info = file.Describe("/g/sub/x");
  EXPECT_EQ(info.chunk, (Shape{2, 3, 4}));
  EXPECT_EQ(info.filters, (std::vector<std::string>{"fletcher32"}));
  H5Id d(H5Dopen2(file.id(), "/g/sub/x", H5P_DEFAULT));
  EXPECT_EQ(DatasetDims(file, d.get(), "x"), (std::vector<hsize_t>{2, 3, 4}));
  std::vector<float> got(source.size(), -1.0f);
  ReadWholeDataset(file, d.get(), "x", H5T_NATIVE_FLOAT, got.data());
  for (size_t i = 0; i < got.size(); ++i) {
    const bool written = (i >= 1 && i < 7) || (i >= 13 && i < 23);
    EXPECT_EQ(got[i], written ? source[i] : 0.0f) << i;
  }
  EXPECT_EQ(ReadIntAttribute(file, "/h", "n"), -5);
  EXPECT_EQ(ReadStringAttribute(file, "/", "s"), "text");
  EXPECT_EQ(ReadStringAttribute(file, "/", "empty"), "");
  EXPECT_TRUE(HasAttribute(file, "/", "s"));
  EXPECT_FALSE(HasAttribute(file, "/", "t"));
  EXPECT_EQ(ReadStringDataset(file, "/cfg"), "a\nb");
  try {
    ReadStringAttribute(file, "/h", "n");
    FAIL() << "an integer attribute read as a string";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_THAT(e.what(), HasSubstr("not a fixed-length string"));
  }
}

}  // namespace hdf5_objects_test
}  // namespace shardflow::io
