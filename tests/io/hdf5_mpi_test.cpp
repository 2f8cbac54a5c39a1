// Parallel HDF5 under mpiexec (1, 2, 4 ranks): collective writes by every rank, sharded
// collective reads that cover every row exactly once (N not divisible by P, N < P), the
// h5py-written fixtures read sharded, and failures that reach every rank instead of hanging.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <memory>

#include "io/hdf5/reader.hpp"
#include "io/hdf5/writer.hpp"
#include "tests/support/mpi_scratch.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::io {
namespace {

using ::testing::HasSubstr;

using shardflow::testing::SharedScratch;
int Rank() { return shardflow::testing::MpiRank(); }
int Size() { return shardflow::testing::MpiSize(); }

// Element e of row r of the test data: a value that identifies both.
double Value(int64_t row, int64_t e) { return static_cast<double>(row * 1000 + e % 1000); }

// Writes "ids" (int64 [n], ids[i] = i) and "values" (float64 [n,3,2]) collectively, each rank
// its shard, in two WriteRows calls per dataset (the second may be empty).
void WriteTestFile(const std::string& path, int64_t n, const Hdf5DatasetOptions& layout,
                   const Hdf5Options& options) {
  Hdf5Writer writer(path, MPI_COMM_WORLD, options);
  writer.CreateDataset("ids", DType::kInt64, {n}, layout);
  writer.CreateDataset("values", DType::kFloat64, {n, 3, 2}, layout);
  const RowRange mine = ShardRows(n, Rank(), Size());
  const int64_t split = mine.begin + mine.size() * 2 / 3;
  for (auto [b, e] : {std::pair{mine.begin, split}, std::pair{split, mine.end}}) {
    Tensor ids(DType::kInt64, {e - b});
    Tensor values(DType::kFloat64, {e - b, 3, 2});
    for (int64_t r = b; r < e; ++r) {
      ids.data<int64_t>()[r - b] = r;
      for (int64_t k = 0; k < 6; ++k) values.data<double>()[(r - b) * 6 + k] = Value(r, k);
    }
    writer.WriteRows("ids", b, ids);
    writer.WriteRows("values", b, values);
  }
  writer.Close();
}

struct Case {
  const char* name;
  Hdf5DatasetOptions layout;
  Hdf5Options options;
};

const Case kCases[] = {
    {"contiguous", {}, {}},
    {"chunked", {.chunk_rows = 7}, {.block_bytes = 100}},
    {"gzip", {.chunk_rows = 16, .gzip_level = 4}, {.block_bytes = 300}},
    {"gzip-shuffle-mpio",
     {.chunk_rows = 5, .gzip_level = 1, .shuffle = true},
     {.driver = Hdf5Options::Driver::kMpio, .block_bytes = 1}},
    {"contiguous-mpio-big-blocks", {}, {.driver = Hdf5Options::Driver::kMpio}},
    {"chunked-individual-io",
     {.chunk_rows = 9},
     {.driver = Hdf5Options::Driver::kMpio, .individual_io = true, .block_bytes = 200}},
};

TEST(Hdf5Mpi, ShardedReadCoversEveryRowExactlyOnce) {
  SharedScratch dir("hdf5-mpi-shard");
  for (const Case& c : kCases) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{1001}}) {
      SCOPED_TRACE(std::string(c.name) + " n=" + std::to_string(n));
      const std::string path = dir / (std::string(c.name) + std::to_string(n) + ".h5");
      WriteTestFile(path, n, c.layout, c.options);
      Hdf5Reader reader(path, MPI_COMM_WORLD, c.options);
      auto group = reader.ReadGroupShard({"ids", "values"},
                                         {{.dtype = DType::kInt64, .rank = 1},
                                          {.dtype = DType::kFloat64, .row_shape = Shape{3, 2}}});
      const RowRange mine = reader.MyShard("ids");
      if (reader.file().uses_mpio() && n > 0) {
        // HDF5 records how the last transfer went: it must have been collective.
        H5D_mpio_actual_io_mode_t mode = H5D_MPIO_NO_COLLECTIVE;
        ASSERT_GE(H5Pget_mpio_actual_io_mode(reader.file().transfer_list(), &mode), 0);
        EXPECT_NE(mode, H5D_MPIO_NO_COLLECTIVE);
      }
      ASSERT_EQ(group[0].shape(), Shape{mine.size()});
      ASSERT_EQ(group[1].shape(), (Shape{mine.size(), 3, 2}));
      // Every row is seen exactly once over all ranks, and its content is the row's own.
      std::vector<int> seen(static_cast<size_t>(n), 0);
      for (int64_t i = 0; i < mine.size(); ++i) {
        const int64_t row = group[0].data<int64_t>()[i];
        ASSERT_GE(row, 0);
        ASSERT_LT(row, n);
        ++seen[static_cast<size_t>(row)];
        for (int64_t k = 0; k < 6; ++k) {
          ASSERT_EQ(group[1].data<double>()[i * 6 + k], Value(row, k)) << "row " << row;
        }
      }
      MPI_Allreduce(MPI_IN_PLACE, seen.data(), static_cast<int>(n), MPI_INT, MPI_SUM,
                    MPI_COMM_WORLD);
      for (int64_t r = 0; r < n; ++r) ASSERT_EQ(seen[static_cast<size_t>(r)], 1) << "row " << r;
      // Collective sums agree with the closed form on every rank.
      EXPECT_EQ(reader.Sum("ids").int_sum, n * (n - 1) / 2);
    }
  }
}

TEST(Hdf5Mpi, ArbitraryRangesAndWholeReadsOnEveryRank) {
  SharedScratch dir("hdf5-mpi-ranges");
  const std::string path = dir / "r.h5";
  WriteTestFile(path, 257, {.chunk_rows = 10, .gzip_level = 2}, {.block_bytes = 64});
  Hdf5Reader reader(path, MPI_COMM_WORLD, {.block_bytes = 64});
  // Each rank its own odd range (different block counts per rank).
  const int64_t b = 3 + 40 * Rank();
  const int64_t e = b + 17 * (Rank() + 1);
  const Tensor ids = reader.ReadRows("ids", b, e);
  for (int64_t i = 0; i < e - b; ++i) ASSERT_EQ(ids.data<int64_t>()[i], b + i);
  const Tensor all = reader.ReadAll("values");
  ASSERT_EQ(all.shape(), (Shape{257, 3, 2}));
  EXPECT_EQ(all.data<double>()[256 * 6 + 5], Value(256, 5));
}

TEST(Hdf5Mpi, IndependentReads) {
  SharedScratch dir("hdf5-mpi-independent");
  const std::string path = dir / "i.h5";
  WriteTestFile(path, 50, {.chunk_rows = 4}, {});
  // Independent transfers: only some ranks read, and a different number of times.
  Hdf5Reader reader(path, MPI_COMM_WORLD,
                    {.driver = Hdf5Options::Driver::kMpio, .collective = false, .block_bytes = 8});
  for (int i = 0; i < Rank(); ++i) {
    const Tensor ids = reader.ReadRows("ids", i, 50);
    ASSERT_EQ(ids.data<int64_t>()[0], i);
    ASSERT_EQ(ids.data<int64_t>()[50 - i - 1], 49);
  }
}

TEST(Hdf5Mpi, FixtureShardsAddUpToTheManifest) {
  const std::string path = (testing::FixturesDir() / "hdf5" / "fmnist-test-1000.h5").string();
  Hdf5Reader reader(path, MPI_COMM_WORLD, {.block_bytes = 784 * 30});
  auto group = reader.ReadGroupShard({"images", "labels", "ids"});
  int64_t sums[3] = {0, 0, 0};
  for (int64_t i = 0; i < group[0].num_elements(); ++i) sums[0] += group[0].data<uint8_t>()[i];
  for (int64_t i = 0; i < group[1].num_elements(); ++i) sums[1] += group[1].data<int64_t>()[i];
  for (int64_t i = 0; i < group[2].num_elements(); ++i) sums[2] += group[2].data<int64_t>()[i];
  MPI_Allreduce(MPI_IN_PLACE, sums, 3, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(sums[0], 58034149);
  EXPECT_EQ(sums[1], 4363);
  EXPECT_EQ(sums[2], 499500);
  EXPECT_EQ(reader.Sum("images").int_sum, 58034149);
  const std::string sensors = (testing::FixturesDir() / "hdf5" / "sensors-48x128x6.h5").string();
  Hdf5Reader series(sensors, MPI_COMM_WORLD);
  EXPECT_NEAR(series.Sum("series").float_sum, -755.3712533370126, 1e-6);
  EXPECT_EQ(series.Sum("asset_id").int_sum, 1128);
}

TEST(Hdf5Mpi, OneRankOutOfRangeFailsEveryRankWithoutHanging) {
  SharedScratch dir("hdf5-mpi-fail");
  const std::string path = dir / "f.h5";
  WriteTestFile(path, 20, {}, {});
  Hdf5Reader reader(path, MPI_COMM_WORLD);
  const int last = Size() - 1;
  const int64_t end = Rank() == last ? 21 : 20;
  try {
    reader.ReadRows("ids", 0, end);
    FAIL() << "no error";
  } catch (const Error& e) {
    if (Rank() == last) {
      EXPECT_THAT(e.what(), HasSubstr("rows [0,21) are outside dataset 'ids' of 20 rows"));
    } else {
      EXPECT_THAT(e.what(), HasSubstr("rank " + std::to_string(last) + " refused"));
    }
  }
  // The file is still usable collectively afterwards.
  EXPECT_EQ(reader.Sum("ids").int_sum, 190);
}

TEST(Hdf5Mpi, MisalignedGroupFailsOnEveryRank) {
  SharedScratch dir("hdf5-mpi-misaligned");
  const std::string path = dir / "m.h5";
  {
    Hdf5Writer writer(path, MPI_COMM_WORLD);
    writer.CreateDataset("images", DType::kUInt8, {11, 4});
    writer.CreateDataset("labels", DType::kInt64, {10});
  }
  Hdf5Reader reader(path, MPI_COMM_WORLD);
  try {
    reader.ReadGroupShard({"images", "labels"});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'images' (11 rows) and 'labels' (10 rows)"));
    EXPECT_THAT(e.what(), HasSubstr("m.h5"));
  }
}

}  // namespace
}  // namespace shardflow::io
