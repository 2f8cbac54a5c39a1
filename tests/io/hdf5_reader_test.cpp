// Single-process tests of the HDF5 reader and writer (serial driver, no MPI): the h5py-written
// fixtures against their manifest, round trips of every dtype and layout, and bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/check_hdf5.hpp"
#include "io/hdf5/reader.hpp"
#include "io/hdf5/writer.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::io {
namespace hdf5_reader_test {

using testing::FixturesDir;
using ::testing::HasSubstr;
using testing::ScratchDir;

std::string Fixture(const std::string& name) { return (FixturesDir() / "hdf5" / name).string(); }

// Sum of a tensor's elements in double, the naive way.
double TensorSum(const Tensor& t) {
  double s = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (t.dtype()) {
      case DType::kUInt8:
        s += t.data<uint8_t>()[i];
        break;
      case DType::kInt32:
        s += t.data<int32_t>()[i];
        break;
      case DType::kInt64:
        s += static_cast<double>(t.data<int64_t>()[i]);
        break;
      case DType::kFloat32:
        s += t.data<float>()[i];
        break;
      case DType::kFloat64:
        s += t.data<double>()[i];
        break;
    }
  }
  return s;
}

template <typename Fn>
std::string ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Hdf5Fixtures, EveryDatasetMatchesTheManifest) {
  std::ifstream in(FixturesDir() / "hdf5" / "hdf5.manifest.json");
  ASSERT_TRUE(in) << "missing manifest";
  const auto manifest = nlohmann::json::parse(in);
  int checked = 0;
  for (const auto& [file, datasets] : manifest.items()) {
    Hdf5Reader reader(Fixture(file), MPI_COMM_SELF);
    EXPECT_EQ(reader.file().ListDatasets().size(), datasets.size()) << file;
    for (const auto& [name, want] : datasets.items()) {
      SCOPED_TRACE(file + ":" + name);
      const Hdf5DatasetInfo info = reader.file().Describe(name);
      EXPECT_EQ(info.type_name, want["dtype"].get<std::string>());
      EXPECT_EQ(info.shape, want["shape"].get<Shape>());
      const double want_sum = want["sum"].get<double>();
      const Hdf5Sum sum = reader.Sum(name);
      EXPECT_NEAR(sum.value(), want_sum, 1e-9 * std::max(1.0, std::abs(want_sum)));
      if (sum.is_integer()) {
        EXPECT_EQ(sum.int_sum, want["sum"].get<int64_t>());
      }
      const Tensor all = reader.ReadAll(name, {.dtype = ParseDType(want["dtype"])});
      EXPECT_EQ(all.shape(), info.shape);
      EXPECT_NEAR(TensorSum(all), want_sum, 1e-6 * std::max(1.0, std::abs(want_sum)));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 5);
}

TEST(Hdf5Fixtures, ListsLayoutAndCompression) {
  Hdf5Reader reader(Fixture("fmnist-test-1000.h5"), MPI_COMM_SELF);
  const auto images = reader.file().Describe("images");
  EXPECT_EQ(images.chunk, (Shape{100, 28, 28}));
  EXPECT_EQ(images.gzip_level, 4);
  EXPECT_THAT(images.filters, ::testing::Contains("deflate"));
  Hdf5Reader sensors(Fixture("sensors-48x128x6.h5"), MPI_COMM_SELF);
  EXPECT_TRUE(sensors.file().Describe("series").chunk.empty());
  EXPECT_EQ(sensors.file().Describe("series").gzip_level, -1);
}

TEST(Hdf5Fixtures, GroupReadKeepsRowsAligned) {
  Hdf5Reader reader(Fixture("fmnist-test-1000.h5"), MPI_COMM_SELF);
  EXPECT_EQ(reader.GroupRows({"images", "labels", "ids"}), 1000);
  auto group = reader.ReadGroupRows({"images", "labels", "ids"}, 250, 731,
                                    {{.dtype = DType::kUInt8, .row_shape = Shape{28, 28}},
                                     {.dtype = DType::kInt64, .rank = 1},
                                     {.dtype = DType::kInt64}});
  ASSERT_EQ(group.size(), 3u);
  EXPECT_EQ(group[0].shape(), (Shape{481, 28, 28}));
  for (int64_t i = 0; i < 481; ++i) ASSERT_EQ(group[2].data<int64_t>()[i], 250 + i);
}

// Block reads with tiny blocks (chunk-aligned, crossing chunk boundaries) against the naive
// twin: one ReadRows call per row.
TEST(Hdf5Fixtures, BlockReadsEqualRowByRowReads) {
  for (int64_t block_bytes : {int64_t{1}, int64_t{5000}, int64_t{100000}, int64_t{64} << 20}) {
    Hdf5Reader reader(Fixture("fmnist-test-1000.h5"), MPI_COMM_SELF, {.block_bytes = block_bytes});
    const Tensor rows = reader.ReadRows("images", 37, 412);
    ASSERT_EQ(rows.shape(), (Shape{375, 28, 28}));
    for (int64_t r = 37; r < 412; r += 53) {
      const Tensor one = reader.ReadRows("images", r, r + 1);
      ASSERT_EQ(0, std::memcmp(one.raw_data(), rows.data<uint8_t>() + (r - 37) * 784, 784))
          << "row " << r << " block_bytes " << block_bytes;
    }
  }
}

TEST(Hdf5Shard, RowsPartitionExactly) {
  for (int64_t n : {0, 1, 2, 3, 7, 1001, 1000000007}) {
    for (int p = 1; p <= 9; ++p) {
      int64_t next = 0;
      for (int r = 0; r < p; ++r) {
        const RowRange range = ShardRows(n, r, p);
        ASSERT_EQ(range.begin, next);
        ASSERT_GE(range.size(), n / p);
        ASSERT_LE(range.size(), n / p + 1);
        // Naive twin: floor(r*n/p) in 128-bit-safe long double for these sizes.
        ASSERT_EQ(range.begin, static_cast<int64_t>(static_cast<long double>(r) * n / p));
        next = range.end;
      }
      ASSERT_EQ(next, n);
    }
  }
  const int64_t huge = int64_t{1} << 62;
  EXPECT_EQ(ShardRows(huge, 3, 4).begin, huge / 4 * 3);
}

// "g<i%3>/d<i>": datasets spread over three groups.
std::string DatasetName(int i) {
  std::string name = "g";
  name += std::to_string(i % 3);
  name += "/d";
  name += std::to_string(i);
  return name;
}

template <typename T>
Tensor Pattern(DType dtype, Shape shape, int64_t first_row) {
  Tensor t(dtype, shape);
  const int64_t row = shape.empty() || shape[0] == 0 ? 1 : t.num_elements() / shape[0];
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    t.data<T>()[i] =
        static_cast<T>((first_row * row + i) % 251 - (dtype == DType::kUInt8 ? 0 : 100));
  }
  return t;
}

Tensor PatternOf(DType dtype, Shape shape, int64_t first_row = 0) {
  switch (dtype) {
    case DType::kUInt8:
      return Pattern<uint8_t>(dtype, shape, first_row);
    case DType::kInt32:
      return Pattern<int32_t>(dtype, shape, first_row);
    case DType::kInt64:
      return Pattern<int64_t>(dtype, shape, first_row);
    case DType::kFloat32:
      return Pattern<float>(dtype, shape, first_row);
    case DType::kFloat64:
      return Pattern<double>(dtype, shape, first_row);
  }
  return {};
}

TEST(Hdf5RoundTrip, EveryDtypeRankAndLayout) {
  ScratchDir dir("hdf5-roundtrip");
  const std::vector<DType> dtypes = {DType::kUInt8, DType::kInt32, DType::kInt64, DType::kFloat32,
                                     DType::kFloat64};
  const std::vector<Shape> shapes = {{0}, {1}, {103}, {17, 5}, {9, 4, 3}, {6, 2, 3, 2}};
  const std::vector<Hdf5DatasetOptions> layouts = {
      {}, {.chunk_rows = 4}, {.chunk_rows = 5, .gzip_level = 6, .shuffle = true}};
  const std::string path = (dir / "all.h5").string();
  {
    Hdf5Writer writer(path, MPI_COMM_SELF, {.block_bytes = 40});
    int i = 0;
    for (DType dtype : dtypes) {
      for (const Shape& shape : shapes) {
        for (const auto& layout : layouts) {
          const std::string name = DatasetName(i);
          writer.CreateDataset(name, dtype, shape, layout);
          // Two calls: the first rows, then the rest.
          const int64_t half = shape[0] / 2;
          Shape a = shape, b = shape;
          a[0] = half;
          b[0] = shape[0] - half;
          writer.WriteRows(name, 0, PatternOf(dtype, a, 0));
          writer.WriteRows(name, half, PatternOf(dtype, b, half));
          ++i;
        }
      }
    }
    writer.Close();
  }
  Hdf5Reader reader(path, MPI_COMM_SELF, {.block_bytes = 64});
  EXPECT_EQ(reader.file().ListDatasets().size(), dtypes.size() * shapes.size() * layouts.size());
  int i = 0;
  for (DType dtype : dtypes) {
    for (const Shape& shape : shapes) {
      for (const auto& layout : layouts) {
        const std::string name = DatasetName(i);
        SCOPED_TRACE(name + " " + DTypeName(dtype) + " " + ShapeToString(shape));
        const Hdf5DatasetInfo info = reader.file().Describe(name);
        EXPECT_EQ(info.gzip_level, layout.gzip_level > 0 ? layout.gzip_level : -1);
        EXPECT_EQ(info.chunk.empty(), layout.chunk_rows == 0);
        const Tensor got = reader.ReadAll(name, {.dtype = dtype, .rank = shape.size()});
        const Tensor want = PatternOf(dtype, shape);
        ASSERT_EQ(got.shape(), shape);
        ASSERT_EQ(0, std::memcmp(got.raw_data(), want.raw_data(), want.byte_size()));
        EXPECT_DOUBLE_EQ(reader.Sum(name).value(), TensorSum(want));
        ++i;
      }
    }
  }
}

TEST(Hdf5Errors, MissingFileNamesIt) {
  try {
    Hdf5Reader reader("/nonexistent/dir/data.h5", MPI_COMM_SELF);
    FAIL() << "opened a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/dir/data.h5"));
  }
}

TEST(Hdf5Errors, NotAnHdf5FileCarriesHdf5Stack) {
  ScratchDir dir("hdf5-bad");
  std::ofstream(dir / "junk.h5") << "this is not an HDF5 file";
  const std::string msg = ErrorOf([&] { Hdf5Reader((dir / "junk.h5").string(), MPI_COMM_SELF); });
  EXPECT_THAT(msg, HasSubstr("junk.h5"));
  EXPECT_THAT(msg, HasSubstr("H5Fopen"));
  EXPECT_THAT(msg, HasSubstr("HDF5:"));
}

TEST(Hdf5Errors, MissingDatasetNamesFileDatasetAndWhatExists) {
  Hdf5Reader reader(Fixture("fmnist-test-1000.h5"), MPI_COMM_SELF);
  for (const char* name : {"imagez", "no/such/group"}) {
    try {
      reader.ReadShard(name);
      FAIL();
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kNotFound);
      EXPECT_THAT(e.what(), HasSubstr(name));
      EXPECT_THAT(e.what(), HasSubstr("fmnist-test-1000.h5"));
      EXPECT_THAT(e.what(), HasSubstr("ids, images, labels"));
    }
  }
}

TEST(Hdf5Errors, WrongDtypeStatesBoth) {
  Hdf5Reader reader(Fixture("fmnist-test-1000.h5"), MPI_COMM_SELF);
  const std::string msg = ErrorOf([&] { reader.ReadShard("labels", {.dtype = DType::kFloat32}); });
  EXPECT_THAT(msg, HasSubstr("expected dtype float32, found int64"));
  EXPECT_THAT(msg, HasSubstr("labels"));
  EXPECT_THAT(msg, HasSubstr("fmnist-test-1000.h5"));
}

TEST(Hdf5Errors, WrongRankAndRowShapeStateBoth) {
  Hdf5Reader reader(Fixture("fmnist-test-1000.h5"), MPI_COMM_SELF);
  std::string msg = ErrorOf([&] { reader.ReadRows("images", 0, 1, {.rank = 4}); });
  EXPECT_THAT(msg, HasSubstr("expected rank 4, found rank 3 (shape [1000,28,28])"));
  EXPECT_THAT(msg, HasSubstr("fmnist-test-1000.h5"));
  msg = ErrorOf([&] { reader.ReadRows("images", 0, 1, {.row_shape = Shape{784}}); });
  EXPECT_THAT(msg, HasSubstr("expected rows of shape [784], found dataset shape [1000,28,28]"));
}

TEST(Hdf5Fixtures, ReadRowsIntoCallerMemory) {
  Hdf5Reader reader(Fixture("fmnist-test-1000.h5"), MPI_COMM_SELF);
  std::vector<int64_t> storage(50, -1);
  Tensor view = Tensor::View(storage.data(), DType::kInt64, {50});
  reader.ReadRowsInto("ids", 900, 950, view);
  for (int64_t i = 0; i < 50; ++i) ASSERT_EQ(storage[static_cast<size_t>(i)], 900 + i);
  Tensor wrong(DType::kInt32, {50});
  EXPECT_THAT(ErrorOf([&] { reader.ReadRowsInto("ids", 900, 950, wrong); }),
              HasSubstr("need a CPU int64 tensor of shape [50], got int32 [50]"));
  Tensor short_rows(DType::kInt64, {49});
  EXPECT_THAT(ErrorOf([&] { reader.ReadRowsInto("ids", 900, 950, short_rows); }),
              HasSubstr("got int64 [49]"));
}

TEST(Hdf5Errors, RowsOutOfRange) {
  Hdf5Reader reader(Fixture("sensors-48x128x6.h5"), MPI_COMM_SELF);
  const std::string msg = ErrorOf([&] { reader.ReadRows("series", 40, 49); });
  EXPECT_THAT(msg, HasSubstr("rows [40,49) are outside dataset 'series' of 48 rows"));
}

TEST(Hdf5Errors, MisalignedGroupNamesBothDatasetsAndLengths) {
  ScratchDir dir("hdf5-misaligned");
  const std::string path = (dir / "mis.h5").string();
  {
    Hdf5Writer writer(path, MPI_COMM_SELF);
    writer.CreateDataset("images", DType::kUInt8, {10, 2, 2});
    writer.CreateDataset("labels", DType::kInt64, {9});
  }
  Hdf5Reader reader(path, MPI_COMM_SELF);
  const std::string msg = ErrorOf([&] { reader.ReadGroupShard({"images", "labels"}); });
  EXPECT_THAT(msg, HasSubstr("'images' (10 rows)"));
  EXPECT_THAT(msg, HasSubstr("'labels' (9 rows)"));
  EXPECT_THAT(msg, HasSubstr("mis.h5"));
}

TEST(Hdf5Errors, UnsupportedTypeIsNamed) {
  ScratchDir dir("hdf5-int16");
  const std::string path = (dir / "i16.h5").string();
  {
    H5Id file(SF_CHECK_H5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)));
    hsize_t dims[1] = {4};
    H5Id space(SF_CHECK_H5(H5Screate_simple(1, dims, nullptr)));
    H5Id ds(SF_CHECK_H5(H5Dcreate2(file.get(), "x", H5T_STD_I16LE, space.get(), H5P_DEFAULT,
                                   H5P_DEFAULT, H5P_DEFAULT)));
  }
  Hdf5Reader reader(path, MPI_COMM_SELF);
  EXPECT_EQ(reader.file().Describe("x").type_name, "int16");
  EXPECT_THAT(ErrorOf([&] { reader.ReadAll("x"); }), HasSubstr("has type int16"));
}

TEST(Hdf5Errors, WriterRejectsBadRows) {
  ScratchDir dir("hdf5-writer-bad");
  Hdf5Writer writer((dir / "w.h5").string(), MPI_COMM_SELF);
  writer.CreateDataset("x", DType::kFloat32, {4, 3});
  EXPECT_THAT(ErrorOf([&] {
                writer.WriteRows("x", 0, Tensor(DType::kInt32, {4, 3}));
              }),
              HasSubstr("holds float32, rows given are int32"));
  EXPECT_THAT(ErrorOf([&] {
                writer.WriteRows("x", 0, Tensor(DType::kFloat32, {4, 2}));
              }),
              HasSubstr("cannot take rows of shape [4,2]"));
  EXPECT_THAT(ErrorOf([&] {
                writer.WriteRows("x", 2, Tensor(DType::kFloat32, {3, 3}));
              }),
              HasSubstr("rows [2,5) are outside"));
  EXPECT_THAT(ErrorOf([&] { writer.CreateDataset("y", DType::kUInt8, {4}, {.gzip_level = 4}); }),
              HasSubstr("compression needs a chunked dataset"));
}

}  // namespace hdf5_reader_test
}  // namespace shardflow::io
