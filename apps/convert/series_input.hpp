// Series inputs of shardflow-convert: a folder of per-asset CSV files (a time column and channel
// columns) or an HDF5 dataset [assets, steps(, channels)]. Assets are read whole, as float64
// [steps, channels].
#pragma once

#include "comm/communicator.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "apps/convert/convert_options.hpp"
#include "core/tensor.hpp"

namespace shardflow::convert {

class SeriesInput {
 public:
  // Lists the assets (CSV: every *.csv file in input.path, sorted by name; the channels are the
  // first file's columns other than input.time_column). Collective for HDF5. Throws Error
  // naming the folder/file when there are no assets or no channels.
  static std::unique_ptr<SeriesInput> Open(const ConvertOptions& options, comm::Communicator& comm);
  virtual ~SeriesInput() = default;

  int64_t assets() const { return static_cast<int64_t>(names_.size()); }
  int64_t channels() const { return static_cast<int64_t>(channel_names_.size()); }
  const std::vector<std::string>& channel_names() const { return channel_names_; }
  const std::string& asset_name(int64_t a) const { return names_.at(a); }  // a file, or "FILE[a]"
  // Assets [begin, end) as float64 [steps, channels] each, every value finite. Collective for
  // HDF5 (every rank calls it the same number of times, maybe with an empty range). Throws
  // Error naming the file and row/column for malformed or non-finite values, a differing
  // header, or a time column that does not strictly increase.
  virtual std::vector<Tensor> Read(int64_t begin, int64_t end) = 0;

 protected:
  std::vector<std::string> names_;
  std::vector<std::string> channel_names_;
};

}  // namespace shardflow::convert
