#include "apps/convert/convert.hpp"

#include "apps/convert/document_input.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/convert/channel_stats.hpp"
#include "apps/convert/document_input.hpp"
#include "apps/convert/image_input.hpp"
#include "apps/convert/image_output.hpp"
#include "apps/convert/series_input.hpp"
#include "apps/convert/series_output.hpp"
#include "apps/convert/shard_plan.hpp"
#include "apps/convert/source_input.hpp"
#include "apps/convert/table_output.hpp"
#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress.hpp"

namespace shardflow::convert {
namespace {

namespace fs = std::filesystem;

// Summaries of `rows` rows of `channels` values of a uint8 or float32 tensor's storage.
std::vector<ChannelSummary> SummarizeTensor(const Tensor& t, int64_t first_row, int64_t rows,
                                            int64_t channels) {
  if (t.dtype() == DType::kUInt8) {
    return Summarize(t.data<uint8_t>() + first_row * channels, rows, channels);
  }
  return Summarize(t.data<float>() + first_row * channels, rows, channels);
}

Tensor NormalizeTensor(const Normalization& n, const Tensor& t, int64_t channels) {
  Tensor out(DType::kFloat32, t.shape());
  const int64_t rows = t.num_elements() / std::max<int64_t>(channels, 1);
  switch (t.dtype()) {
    case DType::kUInt8:
      Normalize(n, t.data<uint8_t>(), rows, channels, out.data<float>());
      break;
    case DType::kFloat32:
      Normalize(n, t.data<float>(), rows, channels, out.data<float>());
      break;
    default:
      Normalize(n, t.data<double>(), rows, channels, out.data<float>());
  }
  return out;
}

void LogNormalization(const Normalization& n, const std::vector<std::string>& channel_names) {
  if (!n.enabled()) return;
  for (size_t c = 0; c < n.offset.size(); ++c) {
    SF_LOG0(Info) << "normalize " << n.method << " channel "
                  << (c < channel_names.size() ? channel_names[c] : std::to_string(c))
                  << ": offset " << n.offset[c] << " divisor " << n.divisor[c];
  }
}

// PREFIX.meta.json: what a reader of the shards needs to know. Rank 0 only.
void WriteMeta(const ConvertOptions& o, const ShardPlan& plan, nlohmann::json meta,
               const Normalization& norm) {
  meta["records"] = plan.records();
  meta["shards"] = plan.shards();
  nlohmann::json files = nlohmann::json::array();
  for (int64_t s = 0; s < plan.shards(); ++s) {
    files.push_back(
        {{"file",
          fs::path(ShardFileName(o.out_path, s, plan.shards(), o.compression)).filename().string()},
         {"first_id", plan.ShardRecords(s).begin},
         {"records", plan.ShardRecords(s).size()}});
  }
  meta["files"] = files;
  meta["compression"] = o.compression;
  meta["normalize"] = {{"method", norm.method},
                       {"offset", norm.offset},
                       {"divisor", norm.divisor},
                       {"formula", "(x - offset) / divisor"}};
  const std::string path = o.out_path + ".meta.json";
  std::ofstream out(path);
  out << meta.dump(2) << "\n";
  out.close();
  if (!out) throw Error(ErrorCode::kIo, "cannot write the metadata file", {.file = path});
}

// The [data] features line shardflow-train reads image shards with (image_raw as written).
std::string ImageFeaturesLine(DType dtype, const Shape& shape) {
  const std::string dims =
      std::to_string(shape[0]) + "x" + std::to_string(shape[1]) + "x" + std::to_string(shape[2]);
  return (dtype == DType::kUInt8 ? "image_raw:bytes:uint8:" : "image_raw:float:float32:") + dims +
         ", label:int64:int64:scalar, id:int64:int64:scalar";
}

int RunImages(MpiEnvironment& env, const ConvertOptions& o, comm::Communicator& comm) {
  auto input = ImageInput::Open(o, comm);
  const int64_t n = o.limit >= 0 ? std::min(o.limit, input->total()) : input->total();
  const ShardPlan plan(n, o.shards, env.rank(), env.size());
  const io::RowRange mine = plan.MyRecords();
  ImageRecords records = input->Read(mine.begin, mine.end);
  const Shape& shape = input->record_shape();  // [H, W, C]
  const int64_t channels = shape[2];
  const int64_t pixels = shape[0] * shape[1];  // rows of `channels` values per image

  Normalization norm;
  if (o.normalize == "scale" && input->dtype() == DType::kUInt8) {
    norm = MakeNormalization("scale", std::vector<ChannelSummary>(channels), true);
  } else if (o.normalize != "none") {
    // One block per shard: a shard's images are summarized by the rank writing it.
    BlockStats stats(plan.shards(), channels);
    for (int64_t s = plan.MyShards().begin; s < plan.MyShards().end; ++s) {
      const io::RowRange ids = plan.ShardRecords(s);
      stats.Set(s, SummarizeTensor(records.images, (ids.begin - mine.begin) * pixels,
                                   ids.size() * pixels, channels));
    }
    norm = MakeNormalization(o.normalize, stats.Reduce(comm, plan.shards()), false);
  }
  LogNormalization(norm, {});
  if (norm.enabled()) records.images = NormalizeTensor(norm, records.images, channels);

  SF_LOG0(Info) << "converting " << n << " images " << ShapeToString(shape) << " into "
                << (o.out_format == "hdf5" ? "1 HDF5 file"
                                           : std::to_string(plan.shards()) + " shards")
                << " on " << env.size() << " ranks";
  ProgressReporter progress(mine.size(), {.label = "convert", .unit = "records"});
  if (o.out_format == "hdf5") {
    WriteImagesHdf5(plan, records, input->stored_shape(), norm, o, comm);
    progress.Advance(mine.size(), static_cast<double>(mine.size()));
  } else {
    WriteImageShards(plan, records, o, progress);
    if (env.rank() == 0) {
      WriteMeta(o, plan,
                {{"kind", "images"},
                 {"shape", shape},
                 {"image_raw_dtype", DTypeName(records.images.dtype())},
                 {"data_features", ImageFeaturesLine(records.images.dtype(), shape)},
                 {"features", {"image_raw", "label", "id", "shape"}}},
                norm);
    }
  }
  progress.Finish();
  return 0;
}

int RunSeries(MpiEnvironment& env, const ConvertOptions& o, comm::Communicator& comm) {
  auto input = SeriesInput::Open(o, comm);
  const int64_t assets = input->assets();
  const int64_t channels = input->channels();

  // Phase 1: each rank reads a contiguous part of the assets for their lengths and statistics
  // (one block per asset; an asset shorter than the window gives no window, so its block stays
  // empty: the statistics cover the assets with >= 1 output window, as --help says).
  const io::RowRange first = io::ShardRows(assets, env.rank(), env.size());
  std::vector<Tensor> read = input->Read(first.begin, first.end);
  std::vector<int64_t> steps(static_cast<size_t>(assets), 0);
  BlockStats stats(assets, channels);
  for (int64_t a = first.begin; a < first.end; ++a) {
    const Tensor& t = read[static_cast<size_t>(a - first.begin)];
    steps[static_cast<size_t>(a)] = t.dim(0);
    if (o.normalize != "none" && t.dim(0) >= o.window) {
      stats.Set(a, Summarize(t.data<double>(), t.dim(0), channels));
    }
  }
  comm::AllreduceInt64(comm, steps.data(), steps.size(), comm::ReduceOp::kSum);
  const WindowLayout layout(steps, o.window, o.stride);
  int64_t short_assets = 0;
  for (int64_t a = 0; a < assets; ++a) {
    if (steps[static_cast<size_t>(a)] < o.window) {
      if (++short_assets <= 5) {
        SF_LOG0(Warn) << input->asset_name(a) << ": " << steps[static_cast<size_t>(a)]
                      << " steps, shorter than the window (" << o.window << "): no windows";
      }
    }
  }
  if (short_assets > 5) {
    SF_LOG0(Warn) << short_assets << " assets in all give no windows";
  }
  const int64_t n = o.limit >= 0 ? std::min(o.limit, layout.total()) : layout.total();
  const int64_t used_assets = n > 0 ? layout.AssetOf(n - 1) + 1 : 0;
  Normalization norm;
  if (o.normalize != "none") {
    norm = MakeNormalization(o.normalize, stats.Reduce(comm, used_assets), false);
  }
  LogNormalization(norm, input->channel_names());

  // Phase 2: the assets this rank's shards need; those outside phase 1's range are read now
  // (two calls on every rank, possibly empty, so HDF5's collective reads line up).
  const ShardPlan plan(n, o.shards, env.rank(), env.size());
  const io::RowRange mine = plan.MyRecords();
  const auto [need_begin, need_end] = layout.AssetsOf(mine.begin, mine.end);
  const int64_t before_end = std::max(need_begin, std::min(need_end, first.begin));
  const int64_t after_begin = std::min(need_end, std::max(need_begin, first.end));
  std::vector<Tensor> before = input->Read(need_begin, before_end);
  std::vector<Tensor> after = input->Read(after_begin, need_end);
  LoadedAssets loaded{.first_asset = need_begin, .channels = channels, .assets = {}};
  for (int64_t a = need_begin; a < need_end; ++a) {
    const Tensor* t = a < before_end     ? &before[static_cast<size_t>(a - need_begin)]
                      : a >= after_begin ? &after[static_cast<size_t>(a - after_begin)]
                                         : &read[static_cast<size_t>(a - first.begin)];
    if (norm.enabled()) {
      loaded.assets.push_back(NormalizeTensor(norm, *t, channels));
    } else {
      Tensor f(DType::kFloat32, t->shape());
      for (int64_t i = 0; i < t->num_elements(); ++i) {
        f.data<float>()[i] = static_cast<float>(t->data<double>()[i]);
      }
      loaded.assets.push_back(std::move(f));
    }
  }
  read.clear();

  SF_LOG0(Info) << "converting " << n << " windows [" << o.window << "," << channels << "] (stride "
                << o.stride << ") from " << assets << " assets into "
                << (o.out_format == "hdf5" ? "1 HDF5 file"
                                           : std::to_string(plan.shards()) + " shards")
                << " on " << env.size() << " ranks";
  ProgressReporter progress(mine.size(), {.label = "convert", .unit = "windows"});
  if (o.out_format == "hdf5") {
    WriteWindowsHdf5(plan, layout, loaded, norm, o, comm);
    progress.Advance(mine.size(), static_cast<double>(mine.size()));
  } else {
    WriteWindowShards(plan, layout, loaded, o, progress);
    if (env.rank() == 0) {
      std::vector<std::string> asset_names;
      for (int64_t a = 0; a < assets; ++a) asset_names.push_back(input->asset_name(a));
      WriteMeta(o, plan,
                {{"kind", "windows"},
                 {"window", o.window},
                 {"stride", o.stride},
                 {"channels", input->channel_names()},
                 {"assets", asset_names},
                 {"features", {"window", "shape", "asset_id", "id", "start"}}},
                norm);
    }
  }
  progress.Finish();
  return 0;
}

}  // namespace

namespace {

// No topology (convert has no hierarchical collectives). The watchdog allows an hour: between
// two collectives the ranks do unequal amounts of reading, decoding and writing, which on a big
// input can keep the first rank to arrive waiting for many minutes; a real hang still ends.
comm::CommunicatorOptions ConvertCommunicatorOptions() {
  comm::CommunicatorOptions options;
  options.discover_topology = false;
  options.watchdog = comm::WatchdogOptions{.timeout_seconds = 3600};
  return options;
}

}  // namespace

int Run(MpiEnvironment& env, const ConvertOptions& o) {
  if (env.rank() == 0) {
    const fs::path parent = fs::path(o.out_path).parent_path();
    std::error_code ec;
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec) {
      throw Error(ErrorCode::kIo, "cannot create the output folder: " + ec.message(),
                  {.file = parent.string()});
    }
  }
  comm::Communicator world(comm::Group::kWorld, ConvertCommunicatorOptions());
  comm::Barrier(world);
  if (IsPipelineSourceFormat(o.format)) return RunPipelineSource(env, o, world);
  if (o.format == "table") return RunTable(env, o, world);
  if (o.format == "documents") return RunDocuments(env, o, world);
  return o.is_series() ? RunSeries(env, o, world) : RunImages(env, o, world);
}

}  // namespace shardflow::convert
