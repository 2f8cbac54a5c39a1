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
  const std::vector<size_t> lengths = comm::GatherLengths(comm, mine.size());
  std::vector<uint8_t> blob;
  size_t header = 0;
  if (comm.rank() == 0) {
    size_t total = 0;
    for (size_t length : lengths) total += length;
    header = 12 + 8 * lengths.size();
    blob.reserve(header + total);
    blob.resize(4);
    std::memcpy(blob.data(), kMagic, 4);
    Put<uint32_t>(&blob, 2);
    Put<uint32_t>(&blob, static_cast<uint32_t>(lengths.size()));
    for (size_t length : lengths) Put<uint64_t>(&blob, static_cast<uint64_t>(length));
    blob.resize(header + total);
  }
  comm::GatherInto(comm, mine.data(), mine.size(), lengths,
                   comm.rank() == 0 ? blob.data() + header : nullptr);
  return blob;
}

std::string RankStateFromBlob(const std::vector<uint8_t>& blob, int rank, int size) {
  if (blob.empty()) return "";
  if (blob.size() < 12 || std::memcmp(blob.data(), kMagic, 4) != 0) {
    throw Error(ErrorCode::kDataLoss, "iterator-state blob in checkpoint has a bad header");
  }
  size_t pos = 4;
  const uint32_t version = Get<uint32_t>(blob, &pos);
  if (version != 1 && version != 2) {
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
  if (version == 2) {
    size_t at = pos + 8 * static_cast<size_t>(size);  // the first state
    for (int r = 0; r < size; ++r) {
      const uint64_t length = Get<uint64_t>(blob, &pos);
      if (at > blob.size() || length > blob.size() - at) {
        throw Error(ErrorCode::kDataLoss, "iterator-state blob in checkpoint is truncated");
      }
      if (r == rank) mine.assign(reinterpret_cast<const char*>(blob.data() + at), length);
      at += length;
    }
    return mine;
  }
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

int RankStatesCount(const std::vector<uint8_t>& blob) {
  if (blob.empty()) return 0;
  if (blob.size() < 12 || std::memcmp(blob.data(), kMagic, 4) != 0) {
    throw Error(ErrorCode::kDataLoss, "iterator-state blob in checkpoint has a bad header");
  }
  size_t pos = 8;
  return static_cast<int>(Get<uint32_t>(blob, &pos));
}

}  // namespace shardflow::train
