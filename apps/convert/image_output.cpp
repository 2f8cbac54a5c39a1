#include "apps/convert/image_output.hpp"

#include <bit>

#include "apps/convert/shard_writer.hpp"
#include "io/example.hpp"
#include "io/hdf5/writer.hpp"

namespace shardflow::convert {

// uint8 image_raw and the HDF5 datasets are documented as little-endian; the bytes are copied
// as-is.
static_assert(std::endian::native == std::endian::little,
              "shardflow-convert assumes little-endian");

void WriteImageShards(const ShardPlan& plan, const ImageRecords& records,
                      const ConvertOptions& options, ProgressReporter& progress) {
  const Shape& shape = records.images.shape();  // [n, H, W, C]
  const int64_t record_bytes = NumElements(Shape(shape.begin() + 1, shape.end())) *
                               static_cast<int64_t>(DTypeSize(records.images.dtype()));
  const auto* base = static_cast<const char*>(records.images.raw_data());
  WriteShardRecords(plan, options, progress, [&](int64_t id, io::ExampleBuilder& builder) {
    const int64_t i = id - records.first;
    if (records.images.dtype() == DType::kFloat32) {
      // Normalized images: a float feature, which image_raw:float:float32:HxWxC reads back.
      const auto count = static_cast<size_t>(record_bytes) / sizeof(float);
      builder.AddFloat("image_raw",
                       std::span<const float>(records.images.data<float>() + i * count, count));
    } else {
      builder.AddBytes("image_raw",
                       {std::string(base + i * record_bytes, static_cast<size_t>(record_bytes))});
    }
    builder.AddInt64("label", {records.labels[static_cast<size_t>(i)]});
    builder.AddInt64("id", {id});
    builder.AddInt64("shape", {shape[1], shape[2], shape[3]});
  });
}

void WriteNormalizationHdf5(io::Hdf5Writer& writer, const Normalization& norm, int rank) {
  if (!norm.enabled()) return;
  const int64_t channels = static_cast<int64_t>(norm.offset.size());
  for (const auto& [name, values] :
       {std::pair{"norm_offset", &norm.offset}, std::pair{"norm_divisor", &norm.divisor}}) {
    writer.CreateDataset(name, DType::kFloat64, {channels});
    Tensor rows(DType::kFloat64, {rank == 0 ? channels : 0});
    if (rank == 0) std::copy(values->begin(), values->end(), rows.data<double>());
    writer.WriteRows(name, 0, rows);
  }
}

void WriteImagesHdf5(const ShardPlan& plan, const ImageRecords& records, const Shape& stored_shape,
                     const Normalization& norm, const ConvertOptions& options,
                     comm::Communicator& comm) {
  const int rank = comm.rank();
  io::Hdf5Writer writer(options.out_path, comm.raw());
  const int64_t n = plan.records();
  const int64_t mine = records.images.dim(0);
  io::Hdf5DatasetOptions data_options;
  if (options.compression != "none") data_options = {.chunk_rows = 256, .gzip_level = 4};
  Shape shape = stored_shape;
  shape.insert(shape.begin(), n);
  Shape my_shape = stored_shape;
  my_shape.insert(my_shape.begin(), mine);
  writer.CreateDataset("images", records.images.dtype(), shape, data_options);
  writer.WriteRows("images", plan.MyRecords().begin, records.images.Reshaped(my_shape));
  Tensor labels(DType::kInt64, {mine});
  Tensor ids(DType::kInt64, {mine});
  for (int64_t i = 0; i < mine; ++i) {
    labels.data<int64_t>()[i] = records.labels[static_cast<size_t>(i)];
    ids.data<int64_t>()[i] = records.first + i;
  }
  writer.CreateDataset("labels", DType::kInt64, {n}, data_options);
  writer.WriteRows("labels", plan.MyRecords().begin, labels);
  writer.CreateDataset("ids", DType::kInt64, {n}, data_options);
  writer.WriteRows("ids", plan.MyRecords().begin, ids);
  WriteNormalizationHdf5(writer, norm, rank);
  writer.Close();
}

}  // namespace shardflow::convert
