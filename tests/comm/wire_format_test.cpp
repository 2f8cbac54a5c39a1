// 16-bit wire conversions against naive twins (no MPI).
#include "comm/wire_format.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "comm/watchdog.hpp"
#include "core/error.hpp"

namespace shardflow::comm {
namespace wire_format_test {

// Naive twin of FloatToBFloat16: pick the nearer of the two bf16 neighbours, ties to even.
uint16_t NaiveBFloat16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  const uint16_t down = static_cast<uint16_t>(bits >> 16);
  const uint16_t up = static_cast<uint16_t>(down + 1);
  const double d_down = std::fabs(static_cast<double>(x) - BFloat16ToFloat(down));
  const double d_up = std::fabs(static_cast<double>(x) - BFloat16ToFloat(up));
  if (d_down < d_up) return down;
  if (d_up < d_down) return up;
  return (down & 1) ? up : down;
}

TEST(WireFormatTest, BFloat16RoundsToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1e6f, 1e6f);
  for (int i = 0; i < 100000; ++i) {
    const float x = dist(rng);
    ASSERT_EQ(FloatToBFloat16(x), NaiveBFloat16(x)) << x;
  }
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f)), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(-0.0f)), -0.0f);
  EXPECT_TRUE(
      std::isnan(BFloat16ToFloat(FloatToBFloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(BFloat16ToFloat(FloatToBFloat16(std::numeric_limits<float>::infinity()))));
}

TEST(WireFormatTest, PackUnpackAccumulateMatchScalarLoops) {
  for (WireFormat format : {WireFormat::kBFloat16, WireFormat::kFloat16}) {
    std::vector<float> src(1003);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i) * 0.37f - 150.0f;
    std::vector<uint16_t> wire(src.size());
    PackToWire(format, src.data(), src.size(), wire.data());
    std::vector<float> back(src.size());
    UnpackFromWire(format, wire.data(), wire.size(), back.data());
    const double rel = format == WireFormat::kBFloat16 ? 1.0 / 256 : 1.0 / 2048;
    for (size_t i = 0; i < src.size(); ++i) {
      ASSERT_NEAR(back[i], src[i], std::fabs(src[i]) * rel + 1e-7) << WireFormatName(format);
    }
    std::vector<float> acc(src.size(), 1.0f);
    AccumulateFromWire(format, wire.data(), wire.size(), acc.data());
    for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(acc[i], 1.0f + back[i]);
    std::vector<float> rounded = src;
    RoundThroughWire(format, rounded.data(), rounded.size());
    EXPECT_EQ(rounded, back);
  }
}

TEST(WireFormatTest, NamesParseAndBadNamesAreRejected) {
  for (WireFormat f : {WireFormat::kFloat32, WireFormat::kBFloat16, WireFormat::kFloat16}) {
    EXPECT_EQ(ParseWireFormat(WireFormatName(f)), f);
  }
  EXPECT_THROW(ParseWireFormat("int8"), Error);
  EXPECT_EQ(WireElementBytes(WireFormat::kFloat32), 4u);
  EXPECT_EQ(WireElementBytes(WireFormat::kBFloat16), 2u);
}

TEST(WatchdogDescribeTest, SortsRanksByWhatTheyAnswered) {
  // Rank 0 timed out in #5; rank 1 joined, rank 2 is still at #4, rank 3 never answered.
  const std::string text =
      Watchdog::Describe(5, "allreduce(ring)", 4096, 4, 0, 2.5, {{0, 0}, {5, 4}, {4, 4}, {-1, -1}});
  EXPECT_NE(text.find("collective #5 allreduce(ring) of 4096 bytes on 4 ranks"), std::string::npos)
      << text;
  EXPECT_NE(text.find("within 2.5 s"), std::string::npos) << text;
  EXPECT_NE(text.find("had not joined it: [2]"), std::string::npos) << text;
  EXPECT_NE(text.find("joined and waiting: [0 1]"), std::string::npos) << text;
  EXPECT_NE(text.find("no answer (dead or stuck outside MPI): [3]"), std::string::npos) << text;
}

}  // namespace wire_format_test
}  // namespace shardflow::comm
