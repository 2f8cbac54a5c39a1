// HDF5 as a row source: the datasets named by the feature specs, aligned by row.
#include <map>

#include "core/thread_annotations.hpp"
#include "io/hdf5/reader.hpp"
#include "io/pipeline/feature_spec.hpp"
#include "io/pipeline/sources/open_source.hpp"
#include "io/pipeline/sources/row_source.hpp"

namespace shardflow::pipeline {
namespace {

// Debian's HDF5 is not thread-safe: every HDF5 call of the pipeline goes through this lock.
// Constant-initialised (Mutex has a constexpr constructor), so usable from any static init.
Mutex g_hdf5_mu;

io::Hdf5Options IndependentOptions() {
  io::Hdf5Options o;
  o.driver = io::Hdf5Options::Driver::kSerial;
  o.collective = false;
  return o;
}

struct Hdf5State {
  std::vector<std::string> paths;
  std::vector<std::string> datasets;
  std::map<size_t, std::unique_ptr<io::Hdf5Reader>> readers GUARDED_BY(g_hdf5_mu);
};

}  // namespace

std::shared_ptr<const RecordSource> OpenHdf5Source(const std::vector<std::string>& files,
                                                   const SourceOptions& options) {
  auto state = std::make_shared<Hdf5State>();
  state->paths = files;
  for (const auto& spec : ParseFeatureSpecs(options.features).features)
    state->datasets.push_back(spec.name);
  if (state->datasets.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "format hdf5 needs the datasets to read",
                {.key = "features", .hint = "e.g. features = images:uint8:28x28, labels:int64"});
  }
  std::vector<FileInfo> infos;
  std::vector<uint64_t> row_bytes;
  {
    MutexLock lock(g_hdf5_mu);
    for (const auto& path : files) {
      FileInfo info = StatFile(path);
      io::Hdf5Reader reader(path, io::SelfCommunicator(), IndependentOptions());
      info.num_records = reader.GroupRows(state->datasets);
      uint64_t bytes = 0;
      for (const auto& name : state->datasets) {
        const io::Hdf5DatasetInfo d = reader.file().Describe(name);
        if (!d.dtype) {
          throw Error(ErrorCode::kInvalidArgument,
                      "dataset type " + d.type_name + " has no tensor dtype",
                      {.file = path, .key = name});
        }
        int64_t row = 1;
        for (size_t i = 1; i < d.shape.size(); ++i) row *= d.shape[i];
        bytes += static_cast<uint64_t>(row) * DTypeSize(*d.dtype);
      }
      infos.push_back(std::move(info));
      row_bytes.push_back(std::max<uint64_t>(1, bytes));
    }
  }
  RowSource::Loader loader = [state](size_t file, int64_t begin, int64_t end) {
    MutexLock lock(g_hdf5_mu);
    auto& reader = state->readers[file];
    if (!reader) {
      reader = std::make_unique<io::Hdf5Reader>(state->paths.at(file), io::SelfCommunicator(),
                                                IndependentOptions());
    }
    std::vector<Tensor> tensors = reader->ReadGroupRows(state->datasets, begin, end);
    RowBlock block;
    for (size_t i = 0; i < tensors.size(); ++i) {
      block.emplace_back(state->datasets[i], std::move(tensors[i]));
    }
    return block;
  };
  std::string description = "hdf5(";
  for (size_t i = 0; i < state->datasets.size(); ++i) {
    description += (i ? "," : "") + state->datasets[i];
  }
  description += ")";
  return std::make_shared<RowSource>(std::move(infos), std::move(row_bytes), std::move(loader),
                                     description, options.block_rows);
}

}  // namespace shardflow::pipeline
