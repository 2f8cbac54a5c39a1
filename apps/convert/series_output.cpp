#include "apps/convert/series_output.hpp"

#include <algorithm>
#include <cstring>

#include "apps/convert/image_output.hpp"
#include "apps/convert/shard_writer.hpp"
#include "io/example.hpp"
#include "io/hdf5/writer.hpp"

namespace shardflow::convert {

WindowLayout::WindowLayout(const std::vector<int64_t>& steps, int64_t window, int64_t stride)
    : window_(window), stride_(stride) {
  first_id_.reserve(steps.size() + 1);
  first_id_.push_back(0);
  for (int64_t t : steps) {
    const int64_t n = t >= window ? (t - window) / stride + 1 : 0;
    first_id_.push_back(first_id_.back() + n);
  }
}

int64_t WindowLayout::AssetOf(int64_t id) const {
  // The last asset whose first id is <= id (assets with no windows share their successor's).
  const auto it = std::upper_bound(first_id_.begin(), first_id_.end(), id);
  return static_cast<int64_t>(it - first_id_.begin()) - 1;
}

std::pair<int64_t, int64_t> WindowLayout::AssetsOf(int64_t begin, int64_t end) const {
  if (begin >= end) return {0, 0};
  return {AssetOf(begin), AssetOf(end - 1) + 1};
}

namespace {

// Copies window `id` (W x C floats) into out.
void CopyWindow(const WindowLayout& layout, const LoadedAssets& loaded, int64_t id, float* out) {
  const Tensor& asset =
      loaded.assets.at(static_cast<size_t>(layout.AssetOf(id) - loaded.first_asset));
  const int64_t channels = asset.dim(1);
  std::memcpy(out, asset.data<float>() + layout.StartOf(id) * channels,
              static_cast<size_t>(layout.window() * channels) * sizeof(float));
}

}  // namespace

void WriteWindowShards(const ShardPlan& plan, const WindowLayout& layout,
                       const LoadedAssets& loaded, const ConvertOptions& options,
                       ProgressReporter& progress) {
  const int64_t channels = loaded.channels;
  std::vector<float> window(static_cast<size_t>(layout.window() * channels));
  WriteShardRecords(plan, options, progress, [&](int64_t id, io::ExampleBuilder& builder) {
    CopyWindow(layout, loaded, id, window.data());
    builder.AddFloat("window", std::span<const float>(window));
    builder.AddInt64("shape", {layout.window(), channels});
    builder.AddInt64("asset_id", {layout.AssetOf(id)});
    builder.AddInt64("id", {id});
    builder.AddInt64("start", {layout.StartOf(id)});
  });
}

void WriteWindowsHdf5(const ShardPlan& plan, const WindowLayout& layout, const LoadedAssets& loaded,
                      const Normalization& norm, const ConvertOptions& options,
                      comm::Communicator& comm) {
  const int rank = comm.rank();
  const int64_t channels = loaded.channels;
  const io::RowRange mine = plan.MyRecords();
  const int64_t w = layout.window();
  Tensor windows(DType::kFloat32, {mine.size(), w, channels});
  Tensor asset_ids(DType::kInt64, {mine.size()});
  Tensor starts(DType::kInt64, {mine.size()});
  Tensor ids(DType::kInt64, {mine.size()});
  for (int64_t id = mine.begin; id < mine.end; ++id) {
    const int64_t i = id - mine.begin;
    CopyWindow(layout, loaded, id, windows.data<float>() + i * w * channels);
    asset_ids.data<int64_t>()[i] = layout.AssetOf(id);
    starts.data<int64_t>()[i] = layout.StartOf(id);
    ids.data<int64_t>()[i] = id;
  }
  io::Hdf5Writer writer(options.out_path, comm.raw());
  io::Hdf5DatasetOptions data_options;
  if (options.compression != "none") {
    data_options = {.chunk_rows = 256, .gzip_level = 4, .shuffle = true};
  }
  const int64_t n = plan.records();
  writer.CreateDataset("windows", DType::kFloat32, {n, w, channels}, data_options);
  writer.WriteRows("windows", mine.begin, windows);
  for (const auto& [name, t] :
       {std::pair{"asset_ids", &asset_ids}, std::pair{"starts", &starts}, std::pair{"ids", &ids}}) {
    writer.CreateDataset(name, DType::kInt64, {n}, data_options);
    writer.WriteRows(name, mine.begin, *t);
  }
  WriteNormalizationHdf5(writer, norm, rank);
  writer.Close();
}

}  // namespace shardflow::convert
