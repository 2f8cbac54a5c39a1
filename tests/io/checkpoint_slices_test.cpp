// The arena coverage check of collective checkpoints (gaps, overlaps, slices past the end, empty
// and negative slices) and the arena CRC assembled from slice CRCs.
#include "io/checkpoint/slices.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

namespace shardflow {
namespace checkpoint_slices_test {

using ::testing::HasSubstr;

TEST(CheckArenaCoverage, ExactCoverInAnyOrderWithEmptySlicesIsOk) {
  EXPECT_TRUE(CheckArenaCoverage({{{7, 3}, {0, 2}}, {}, {{2, 5}, {4, 0}}}, 10).ok());
  EXPECT_TRUE(CheckArenaCoverage({{}, {}}, 0).ok());
  EXPECT_TRUE(CheckArenaCoverage({{{0, 0}}}, 0).ok());
}

TEST(CheckArenaCoverage, GapInTheMiddleNamesTheElementsAndTheNextRank) {
  const Status s = CheckArenaCoverage({{{0, 4}}, {{6, 4}}}, 10);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("no rank owns arena elements [4,6)"));
  EXPECT_THAT(s.message(), HasSubstr("rank 1's slice [6,10)"));
}

TEST(CheckArenaCoverage, GapAtTheStartAndAtTheEnd) {
  EXPECT_THAT(CheckArenaCoverage({{{1, 9}}}, 10).message(),
              HasSubstr("no rank owns arena elements [0,1)"));
  EXPECT_THAT(CheckArenaCoverage({{{0, 4}}, {}}, 10).message(),
              HasSubstr("no rank owns arena elements [4,10)"));
  EXPECT_THAT(CheckArenaCoverage({{}, {}}, 3).message(),
              HasSubstr("no rank owns arena elements [0,3)"));
}

TEST(CheckArenaCoverage, OverlapNamesBothRanksAndSlices) {
  const Status s = CheckArenaCoverage({{{0, 6}}, {}, {{5, 5}}}, 10);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("rank 2's slice [5,10) overlaps rank 0's slice [0,6)"));
  // The same slice owned twice by one rank.
  EXPECT_THAT(CheckArenaCoverage({{{0, 10}, {0, 10}}}, 10).message(), HasSubstr("overlaps"));
}

TEST(CheckArenaCoverage, SlicesPastTheEndOrNegativeAreRefused) {
  EXPECT_THAT(CheckArenaCoverage({{{0, 5}}, {{5, 6}}}, 10).message(),
              HasSubstr("rank 1's slice at offset 5 of size 6 runs past the arena of 10"));
  EXPECT_THAT(CheckArenaCoverage({{{-1, 5}}}, 10).message(), HasSubstr("is negative"));
  EXPECT_THAT(CheckArenaCoverage({{{0, 10}}, {{3, -2}}}, 10).message(),
              HasSubstr("rank 1's slice at offset 3 of size -2 is negative"));
  // Offsets so large that offset + size would overflow.
  EXPECT_FALSE(CheckArenaCoverage({{{0, 10}}, {{INT64_MAX, INT64_MAX}}}, 10).ok());
}

TEST(CombineSliceCrcs, EqualsTheCrcOfTheWholeArena) {
  std::mt19937 gen(3);
  std::vector<float> arena(1001);
  for (float& x : arena) x = std::uniform_real_distribution<float>(-1, 1)(gen);
  const uint32_t whole = Crc32(arena.data(), arena.size() * sizeof(float));
  std::vector<SliceCrc> slices;
  for (auto [offset, size] : {std::pair<int64_t, int64_t>{700, 301}, {0, 1}, {1, 0}, {1, 699}}) {
    slices.push_back({offset, size, Crc32(arena.data() + offset, size * sizeof(float))});
  }
  EXPECT_EQ(CombineSliceCrcs(slices), whole);
  arena[500] += 1.0f;
  EXPECT_NE(Crc32(arena.data(), arena.size() * sizeof(float)), whole);
  EXPECT_EQ(CombineSliceCrcs({}), Crc32(nullptr, 0));
}

}  // namespace checkpoint_slices_test
}  // namespace shardflow
