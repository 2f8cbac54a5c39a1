// hdf5_interop_writer OUT.h5: every rank writes its shard of a few datasets (all five dtypes,
// contiguous, chunked, gzip, in a group) collectively; rank 0 then prints, for each dataset in
// name order, "name dtype shape chunks compression sum" computed from the values it generated
// (not read back), for tests/io/h5py_check.py to compare with what h5py finds in the file.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/mpi_env.hpp"
#include "io/hdf5/reader.hpp"
#include "io/hdf5/writer.hpp"

namespace {

using shardflow::DType;
using shardflow::Shape;
using shardflow::Tensor;
using namespace shardflow::io;

struct Spec {
  std::string name;
  DType dtype;
  Shape shape;
  Hdf5DatasetOptions layout;
};

// Element i of a dataset: small values whose float sums are exact in float64.
double ValueAt(DType dtype, int64_t i) {
  switch (dtype) {
    case DType::kUInt8:
      return static_cast<double>((i * 7) % 256);
    case DType::kInt32:
      return static_cast<double>(i % 1000 - 500);
    case DType::kInt64:
      return static_cast<double>(i * 1000003);
    case DType::kFloat32:
      return static_cast<double>(i % 64) * 0.25 - 3.0;
    case DType::kFloat64:
      return static_cast<double>(i % 1024) * 0.125 - 7.5;
  }
  return 0;
}

// "a,b,c" (GCC 12 warns falsely on const char* + std::string temporaries, hence append).
std::string Join(const Shape& shape, size_t from) {
  std::string out;
  for (size_t d = from; d < shape.size(); ++d) {
    if (d > from) out.push_back(',');
    out.append(std::to_string(shape[d]));
  }
  return out;
}

template <typename T>
void Fill(Tensor* t, int64_t first) {
  for (int64_t i = 0; i < t->num_elements(); ++i) {
    t->data<T>()[i] = static_cast<T>(ValueAt(t->dtype(), first + i));
  }
}

int Run(const std::string& path) {
  const std::vector<Spec> specs = {
      {"images", DType::kUInt8, {1001, 28, 28}, {.chunk_rows = 100, .gzip_level = 4}},
      {"ids", DType::kInt64, {1001}, {}},
      {"meta/counts", DType::kInt32, {37, 3}, {.chunk_rows = 8}},
      {"meta/series",
       DType::kFloat32,
       {10, 4, 5},
       {.chunk_rows = 3, .gzip_level = 1, .shuffle = true}},
      {"weights", DType::kFloat64, {7}, {.chunk_rows = 2, .gzip_level = 9}},
  };
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  {
    Hdf5Writer writer(path, MPI_COMM_WORLD, {.block_bytes = 4096});
    for (const Spec& s : specs) {
      writer.CreateDataset(s.name, s.dtype, s.shape, s.layout);
      const RowRange mine = ShardRows(s.shape[0], rank, size);
      Shape part = s.shape;
      part[0] = mine.size();
      Tensor rows(s.dtype, part);
      const int64_t first = rows.num_elements() == 0
                                ? 0
                                : mine.begin * (shardflow::NumElements(s.shape) / s.shape[0]);
      switch (s.dtype) {
        case DType::kUInt8:
          Fill<uint8_t>(&rows, first);
          break;
        case DType::kInt32:
          Fill<int32_t>(&rows, first);
          break;
        case DType::kInt64:
          Fill<int64_t>(&rows, first);
          break;
        case DType::kFloat32:
          Fill<float>(&rows, first);
          break;
        case DType::kFloat64:
          Fill<double>(&rows, first);
          break;
      }
      writer.WriteRows(s.name, mine.begin, rows);
    }
    writer.Close();
  }
  if (rank != 0) return 0;
  std::vector<Spec> sorted = specs;
  std::sort(sorted.begin(), sorted.end(),
            [](const Spec& a, const Spec& b) { return a.name < b.name; });
  for (const Spec& s : sorted) {
    double sum = 0;
    for (int64_t i = 0; i < shardflow::NumElements(s.shape); ++i) sum += ValueAt(s.dtype, i);
    const std::string shape = Join(s.shape, 0);
    std::string chunks = "contiguous";
    if (s.layout.chunk_rows > 0) {
      Shape chunk = s.shape;
      chunk[0] = s.layout.chunk_rows;
      chunks = Join(chunk, 0);
    }
    std::string compression = "none";
    if (s.layout.gzip_level > 0)
      compression = std::string("gzip").append(std::to_string(s.layout.gzip_level));
    std::printf("%s %s [%s] %s %s %.6f\n", s.name.c_str(), shardflow::DTypeName(s.dtype),
                shape.c_str(), chunks.c_str(), compression.c_str(), sum);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  return shardflow::RunMain(
      argc, argv,
      [&](shardflow::MpiEnvironment&) {
        if (argc != 2) {
          throw shardflow::Error(shardflow::ErrorCode::kInvalidArgument,
                                 "usage: hdf5_interop_writer OUT.h5");
        }
        path = argv[1];
      },
      [&](shardflow::MpiEnvironment&) { return Run(path); });
}
