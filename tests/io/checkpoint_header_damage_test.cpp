// A flipped byte in a checkpoint's superblock, root object header or root attributes is damage
// (issue 20, item 11): ReadCheckpointInfo says data loss and LoadLatestCheckpoint falls back to
// the earlier intact checkpoint, as for other damage (it used to refuse the whole resume with
// "not a shardflow checkpoint").
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "io/checkpoint/checkpoint.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace checkpoint_header_damage_test {

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Offsets of the header bytes: the superblock and root object header (up to the second object
// header), and 64 bytes either side of the format attribute's value.
std::vector<size_t> HeaderOffsets(const std::string& bytes) {
  std::vector<size_t> out;
  const size_t second = bytes.find("OHDR", bytes.find("OHDR") + 4);
  for (size_t i = 0; i < second && i < bytes.size(); ++i) out.push_back(i);
  const size_t value = bytes.find("shardflow-checkpoint");
  if (value != std::string::npos) {
    for (size_t i = value < 64 ? 0 : value - 64; i < value + 84 && i < bytes.size(); ++i) {
      out.push_back(i);
    }
  }
  return out;
}

TEST(CheckpointHeaderDamage, FlippedHeaderBytesAreDataLossAndResumeFallsBack) {
  testing::ScratchDir dir("ckpt_header_damage");
  const CheckpointOptions co{.dir = dir.path().string(), .keep_last = 0};
  Sequential<float> m("flatten, dense:3", {4});
  const std::string first = SaveCheckpoint(co, m, nullptr, {.step = 1});
  m.arena().params()[0] += 1.0f;
  const std::string second = SaveCheckpoint(co, m, nullptr, {.step = 2});
  const std::string bytes = ReadBytes(second);
  const std::vector<size_t> offsets = HeaderOffsets(bytes);
  ASSERT_GT(offsets.size(), 200u);
  int damaged = 0;
  for (const size_t pos : offsets) {
    std::string bad = bytes;
    bad[pos] = static_cast<char>(bad[pos] ^ 0xff);
    std::ofstream(second, std::ios::binary | std::ios::trunc) << bad;
    try {
      ReadCheckpointInfo(second);
    } catch (const Error& e) {
      ++damaged;
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << "flip at " << pos << ": " << e.what();
    }
    Sequential<float> r("flatten, dense:3", {4});
    TrainingState st;
    try {
      const std::string loaded = LoadLatestCheckpoint(co, r, nullptr, &st);
      EXPECT_TRUE(loaded == first || loaded == second) << "flip at " << pos;
    } catch (const Error& e) {
      ADD_FAILURE() << "flip at " << pos << " stopped the fallback: " << e.what();
    }
  }
  EXPECT_GT(damaged, 100);
  std::ofstream(second, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace checkpoint_header_damage_test
}  // namespace shardflow
