#include "io/crc32c.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace shardflow::io {
namespace crc32c_test {

// Bit-at-a-time CRC32C: the naive twin of both fast implementations.
uint32_t NaiveCrc32c(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

TEST(Crc32c, Rfc3720Vectors) {
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32), dec(32);
  for (int i = 0; i < 32; ++i) {
    inc[i] = static_cast<uint8_t>(i);
    dec[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(crc32c::Value(zeros.data(), 32), 0x8a9136aau);
  EXPECT_EQ(crc32c::Value(ones.data(), 32), 0x62a8ab43u);
  EXPECT_EQ(crc32c::Value(inc.data(), 32), 0x46dd794eu);
  EXPECT_EQ(crc32c::Value(dec.data(), 32), 0x113fdb5cu);
  // iSCSI read command PDU from RFC 3720 B.4.
  const uint8_t iscsi[48] = {0x01, 0xc0, 0, 0, 0, 0, 0,    0, 0,    0, 0, 0,    0, 0, 0, 0,
                             0x14, 0,    0, 0, 0, 0, 0x04, 0, 0,    0, 0, 0x14, 0, 0, 0, 0x18,
                             0x28, 0,    0, 0, 0, 0, 0,    0, 0x02, 0, 0, 0,    0, 0, 0, 0};
  EXPECT_EQ(crc32c::Value(iscsi, sizeof(iscsi)), 0xd9963a56u);
  EXPECT_EQ(crc32c::Value(std::string_view("123456789")), 0xe3069283u);
  EXPECT_EQ(crc32c::ExtendPortable(0, "123456789", 9), 0xe3069283u);
}

TEST(Crc32c, MaskRoundTripsAndMatchesTensorFlowConstant) {
  EXPECT_EQ(crc32c::Mask(0), 0xa282ead8u);
  for (uint32_t v : {0u, 1u, 0xdeadbeefu, 0xffffffffu}) {
    EXPECT_EQ(crc32c::Unmask(crc32c::Mask(v)), v);
  }
  EXPECT_EQ(crc32c::Mask(0x12345678u), ((0x12345678u >> 15) | (0x12345678u << 17)) + 0xa282ead8u);
}

TEST(Crc32c, ImplementationsAgreeOnRandomBuffersAllSizesAndAlignments) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(100000 + 16);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  std::vector<size_t> sizes;
  for (size_t n = 0; n < 300; ++n) sizes.push_back(n);
  for (size_t n : {767u, 768u, 769u, 1023u, 1024u, 1025u, 1279u, 1280u, 1281u, 4096u, 24063u,
                   24064u, 24065u, 24575u, 24576u, 24577u, 49152u + 771u, 100000u})
    sizes.push_back(n);
  for (size_t n : sizes) {
    for (size_t align = 0; align < 8; align += (n > 1000 ? 3 : 1)) {
      const uint8_t* p = buf.data() + align;
      const uint32_t want = NaiveCrc32c(p, n);
      ASSERT_EQ(crc32c::ExtendPortable(0, p, n), want) << "n=" << n << " align=" << align;
      if (crc32c::HardwareAvailable()) {
        ASSERT_EQ(crc32c::ExtendHardware(0, p, n), want) << "n=" << n << " align=" << align;
        ASSERT_EQ(crc32c::ExtendHardwareSingleStream(0, p, n), want) << "n=" << n;
      }
      if (crc32c::FoldingAvailable()) {
        ASSERT_EQ(crc32c::ExtendFolding(0, p, n), want) << "n=" << n << " align=" << align;
      }
      ASSERT_EQ(crc32c::Value(p, n), want);
    }
  }
}

// The folding kernel continues from a non-zero CRC (the starting value is XORed into the first
// lane) and agrees with the table code at every block boundary it crosses.
TEST(Crc32c, FoldingContinuesFromAnyCrc) {
  if (!crc32c::FoldingAvailable()) GTEST_SKIP() << "no VPCLMULQDQ on this CPU";
  std::mt19937 rng(11);
  std::vector<uint8_t> buf(70000);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t cut : {0ul, 1ul, 13ul, 256ul, 1000ul, 33333ul}) {
    for (size_t n : {1024ul, 1536ul, 4097ul, 36000ul}) {
      const uint32_t start = crc32c::ExtendPortable(0, buf.data(), cut);
      ASSERT_EQ(crc32c::ExtendFolding(start, buf.data() + cut, n),
                crc32c::ExtendPortable(start, buf.data() + cut, n))
          << "cut=" << cut << " n=" << n;
    }
  }
  std::vector<uint8_t> zeros(4096, 0), ones(4096, 0xff);
  EXPECT_EQ(crc32c::ExtendFolding(0, zeros.data(), zeros.size()), NaiveCrc32c(zeros.data(), 4096));
  EXPECT_EQ(crc32c::ExtendFolding(0, ones.data(), ones.size()), NaiveCrc32c(ones.data(), 4096));
}

TEST(Crc32c, ExtendIsIncremental) {
  const std::string s = std::string(5000, 'x') + "hello world" + std::string(30000, 'y');
  const uint32_t whole = crc32c::Value(s);
  for (size_t cut : {0ul, 1ul, 7ul, 4999ul, 5011ul, s.size()}) {
    const uint32_t a = crc32c::Value(s.data(), cut);
    EXPECT_EQ(crc32c::Extend(a, s.data() + cut, s.size() - cut), whole) << cut;
    EXPECT_EQ(crc32c::ExtendPortable(crc32c::ExtendPortable(0, s.data(), cut), s.data() + cut,
                                     s.size() - cut),
              whole);
  }
}

}  // namespace crc32c_test
}  // namespace shardflow::io
