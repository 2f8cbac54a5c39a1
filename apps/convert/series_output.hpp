// Sliding windows over series and writing them: this rank's TFRecord shard files, or its rows of
// one HDF5 file.
#pragma once

#include "comm/communicator.hpp"

#include <cstdint>
#include <vector>

#include "apps/convert/channel_stats.hpp"
#include "apps/convert/convert_options.hpp"
#include "apps/convert/shard_plan.hpp"
#include "core/progress.hpp"
#include "core/tensor.hpp"

namespace shardflow::convert {

// The global numbering of windows: asset a of T_a steps gives n_a = floor((T_a - W) / S) + 1
// windows (0 when T_a < W), with ids first_id[a] .. first_id[a] + n_a - 1; window k of asset a
// starts at step k * S.
class WindowLayout {
 public:
  // REQUIRES: window > 0, stride > 0, steps[a] >= 0.
  WindowLayout(const std::vector<int64_t>& steps, int64_t window, int64_t stride);
  int64_t total() const { return first_id_.back(); }
  int64_t window() const { return window_; }
  // The asset holding window `id` and the window's first step. REQUIRES 0 <= id < total().
  int64_t AssetOf(int64_t id) const;
  int64_t StartOf(int64_t id) const { return (id - first_id_[AssetOf(id)]) * stride_; }
  // Assets holding windows [begin, end): [first, last + 1); empty when begin == end.
  std::pair<int64_t, int64_t> AssetsOf(int64_t begin, int64_t end) const;

 private:
  int64_t window_;
  int64_t stride_;
  std::vector<int64_t> first_id_;  // assets + 1 entries
};

// Normalized assets [first_asset, first_asset + assets.size()) as float32 [steps, channels].
struct LoadedAssets {
  int64_t first_asset = 0;
  int64_t channels = 0;
  std::vector<Tensor> assets;
};

// Writes shards plan.MyShards(): each window a tf.train.Example (schema in ConvertHelpEpilogue).
// REQUIRES: `loaded` holds every asset of plan.MyRecords(). Throws Error(kIo) naming the file.
void WriteWindowShards(const ShardPlan& plan, const WindowLayout& layout,
                       const LoadedAssets& loaded, const ConvertOptions& options,
                       ProgressReporter& progress);

// Creates options.out_path on every rank of `comm` and writes this rank's windows [N, W, C],
// asset_ids, starts and ids, plus the normalization. Collective.
void WriteWindowsHdf5(const ShardPlan& plan, const WindowLayout& layout, const LoadedAssets& loaded,
                      const Normalization& norm, const ConvertOptions& options,
                      comm::Communicator& comm);

}  // namespace shardflow::convert
