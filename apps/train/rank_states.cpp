#include "apps/train/rank_states.hpp"

#include <cstring>

#include "comm/collectives.hpp"
#include "core/error.hpp"

namespace shardflow::train {
namespace {

constexpr char kMagic[4] = {'S', 'F', 'R', 'S'};

template <typename T>
void Put(std::vector<uint8_t>* out, T value) {
  const size_t at = out->size();
  out->resize(at + sizeof(T));
  std::memcpy(out->data() + at, &value, sizeof(T));  // x86-64: little-endian
}

template <typename T>
T Get(const std::vector<uint8_t>& in, size_t* pos) {
  if (*pos + sizeof(T) > in.size()) {
    throw Error(ErrorCode::kDataLoss, "iterator-state blob in checkpoint is truncated");
  }
  T value;
  std::memcpy(&value, in.data() + *pos, sizeof(T));
  *pos += sizeof(T);
  return value;
}

}  // namespace

std::vector<uint8_t> GatherRankStates(const std::string& mine, comm::Communicator& comm) {
  const std::vector<std::vector<uint8_t>> states =
      comm::GatherBytes(comm, mine.data(), mine.size());
  std::vector<uint8_t> blob;
  if (comm.rank() != 0) return blob;
  blob.resize(4);
  std::memcpy(blob.data(), kMagic, 4);
  Put<uint32_t>(&blob, 1);
  Put<uint32_t>(&blob, static_cast<uint32_t>(states.size()));
  for (const std::vector<uint8_t>& state : states) {
    Put<uint64_t>(&blob, static_cast<uint64_t>(state.size()));
    blob.insert(blob.end(), state.begin(), state.end());
  }
  return blob;
}

std::string RankStateFromBlob(const std::vector<uint8_t>& blob, int rank, int size) {
  if (blob.empty()) return "";
  if (blob.size() < 12 || std::memcmp(blob.data(), kMagic, 4) != 0) {
    throw Error(ErrorCode::kDataLoss, "iterator-state blob in checkpoint has a bad header");
  }
  size_t pos = 4;
  if (Get<uint32_t>(blob, &pos) != 1) {
    throw Error(ErrorCode::kDataLoss, "iterator-state blob has an unknown version");
  }
  const uint32_t ranks = Get<uint32_t>(blob, &pos);
  if (static_cast<int>(ranks) != size) {
    throw Error(ErrorCode::kInvalidArgument,
                "the checkpoint was written by " + std::to_string(ranks) +
                    " ranks; resuming exactly needs the same number (this job has " +
                    std::to_string(size) + ")",
                {.hint = "run with -np " + std::to_string(ranks) +
                         ", or use --checkpoint.warm_start for weights only"});
  }
  std::string mine;
  for (int r = 0; r < size; ++r) {
    const uint64_t length = Get<uint64_t>(blob, &pos);
    if (pos + length > blob.size()) {
      throw Error(ErrorCode::kDataLoss, "iterator-state blob in checkpoint is truncated");
    }
    if (r == rank) mine.assign(reinterpret_cast<const char*>(blob.data() + pos), length);
    pos += length;
  }
  return mine;
}

}  // namespace shardflow::train
