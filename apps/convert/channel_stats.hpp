// Per-channel statistics over data spread across ranks, identical for any number of ranks, and
// the normalization they define.
//
// The data are cut into blocks fixed by the data, not by the ranks (a shard of images, an asset
// of a series). The rank holding a block summarizes it (count, mean, M2 = sum of squared
// deviations, min, max per channel, two passes over the block in double). BlockStats then
// all-reduces a [blocks x channels x 5] array in which each entry has one owner and every other
// rank contributes 0, so each entry arrives exact (x + 0 = x), and every rank merges the blocks
// in block order with Chan et al.'s pairwise update. The result does not depend on the number of
// ranks, and M2 avoids the cancellation of sum-of-squares formulas.
//
// Thread-safety: none; BlockStats::Reduce is collective over the communicator.
#pragma once

#include "comm/communicator.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace shardflow::convert {

struct ChannelSummary {
  double count = 0;
  double mean = 0;
  double m2 = 0;
  double min = 0;
  double max = 0;
};

// Summarizes `rows` rows of `channels` values (row-major, channel fastest) of type T.
template <typename T>
std::vector<ChannelSummary> Summarize(const T* data, int64_t rows, int64_t channels);

// Merges b into a (Chan et al.); either may be empty (count 0).
void Merge(ChannelSummary& a, const ChannelSummary& b);

class BlockStats {
 public:
  BlockStats(int64_t blocks, int64_t channels);
  // Records this rank's summary of block `block`. REQUIRES: summary.size() == channels.
  void Set(int64_t block, const std::vector<ChannelSummary>& summary);
  // Collective: exchanges the blocks and merges blocks [0, used_blocks) in order.
  std::vector<ChannelSummary> Reduce(comm::Communicator& comm, int64_t used_blocks);

 private:
  int64_t blocks_;
  int64_t channels_;
  std::vector<double> values_;  // [blocks][channels][5]
};

// y = (x - offset[c]) / divisor[c], per channel.
struct Normalization {
  std::string method = "none";  // none | scale | standardize
  std::vector<double> offset;
  std::vector<double> divisor;
  bool enabled() const { return method != "none"; }
};

// The normalization for `method` from global stats. uint8_images: "scale" divides by 255.
// A zero std or range gives divisor 1.
Normalization MakeNormalization(const std::string& method, const std::vector<ChannelSummary>& s,
                                bool uint8_images);

// Normalizes `rows` x `channels` values into float32.
template <typename T>
void Normalize(const Normalization& n, const T* in, int64_t rows, int64_t channels, float* out);

}  // namespace shardflow::convert
