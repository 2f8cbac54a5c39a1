#include "apps/convert/channel_stats.hpp"

#include <algorithm>
#include <cmath>

#include "comm/collectives.hpp"
#include "core/error.hpp"

namespace shardflow::convert {

template <typename T>
std::vector<ChannelSummary> Summarize(const T* data, int64_t rows, int64_t channels) {
  std::vector<ChannelSummary> s(static_cast<size_t>(channels));
  if (rows == 0) return s;
  std::vector<double> sum(static_cast<size_t>(channels), 0.0);
  for (int64_t c = 0; c < channels; ++c) {
    s[c].count = static_cast<double>(rows);
    s[c].min = s[c].max = static_cast<double>(data[c]);
  }
  // Pass 1: sums, min, max. Pass 2: squared deviations from the block mean.
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = data + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double x = static_cast<double>(row[c]);
      sum[c] += x;
      s[c].min = std::min(s[c].min, x);
      s[c].max = std::max(s[c].max, x);
    }
  }
  for (int64_t c = 0; c < channels; ++c) s[c].mean = sum[c] / static_cast<double>(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = data + r * channels;
    for (int64_t c = 0; c < channels; ++c) {
      const double d = static_cast<double>(row[c]) - s[c].mean;
      s[c].m2 += d * d;
    }
  }
  return s;
}

template std::vector<ChannelSummary> Summarize(const uint8_t*, int64_t, int64_t);
template std::vector<ChannelSummary> Summarize(const float*, int64_t, int64_t);
template std::vector<ChannelSummary> Summarize(const double*, int64_t, int64_t);

void Merge(ChannelSummary& a, const ChannelSummary& b) {
  if (b.count == 0) return;
  if (a.count == 0) {
    a = b;
    return;
  }
  const double n = a.count + b.count;
  const double delta = b.mean - a.mean;
  a.mean += delta * (b.count / n);
  a.m2 += b.m2 + delta * delta * (a.count * b.count / n);
  a.count = n;
  a.min = std::min(a.min, b.min);
  a.max = std::max(a.max, b.max);
}

BlockStats::BlockStats(int64_t blocks, int64_t channels)
    : blocks_(blocks),
      channels_(channels),
      values_(static_cast<size_t>(blocks * channels * 5), 0.0) {}

void BlockStats::Set(int64_t block, const std::vector<ChannelSummary>& summary) {
  if (block < 0 || block >= blocks_ || static_cast<int64_t>(summary.size()) != channels_) {
    throw Error(ErrorCode::kInternal, "BlockStats::Set: block or channel count out of range");
  }
  for (int64_t c = 0; c < channels_; ++c) {
    double* v = &values_[static_cast<size_t>((block * channels_ + c) * 5)];
    v[0] = summary[c].count;
    v[1] = summary[c].mean;
    v[2] = summary[c].m2;
    v[3] = summary[c].min;
    v[4] = summary[c].max;
  }
}

std::vector<ChannelSummary> BlockStats::Reduce(comm::Communicator& comm, int64_t used_blocks) {
  // One owner per block: the sum delivers every entry unchanged (x + 0 == x exactly).
  comm::AllreduceDoubles(comm, values_.data(), values_.size(), comm::ReduceOp::kSum);
  std::vector<ChannelSummary> total(static_cast<size_t>(channels_));
  for (int64_t b = 0; b < std::min(used_blocks, blocks_); ++b) {
    for (int64_t c = 0; c < channels_; ++c) {
      const double* v = &values_[static_cast<size_t>((b * channels_ + c) * 5)];
      Merge(total[c], {v[0], v[1], v[2], v[3], v[4]});
    }
  }
  return total;
}

Normalization MakeNormalization(const std::string& method, const std::vector<ChannelSummary>& s,
                                bool uint8_images) {
  Normalization n;
  n.method = method;
  if (method == "none") return n;
  for (const ChannelSummary& c : s) {
    double offset = 0, divisor = 1;
    if (method == "scale") {
      if (uint8_images) {
        divisor = 255.0;
      } else {
        offset = c.min;
        divisor = c.max - c.min;
      }
    } else {
      offset = c.mean;
      divisor = c.count > 0 ? std::sqrt(c.m2 / c.count) : 1.0;
    }
    n.offset.push_back(offset);
    n.divisor.push_back(divisor > 0 ? divisor : 1.0);
  }
  return n;
}

template <typename T>
void Normalize(const Normalization& n, const T* in, int64_t rows, int64_t channels, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      out[i] = static_cast<float>((static_cast<double>(in[i]) - n.offset[c]) / n.divisor[c]);
    }
  }
}

template void Normalize(const Normalization&, const uint8_t*, int64_t, int64_t, float*);
template void Normalize(const Normalization&, const float*, int64_t, int64_t, float*);
template void Normalize(const Normalization&, const double*, int64_t, int64_t, float*);

}  // namespace shardflow::convert
