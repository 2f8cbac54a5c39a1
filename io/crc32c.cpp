// CRC32C implementations.
//
// Portable: slicing-by-8. Eight 256-entry tables let one step fold 8 input bytes: table k holds
// the CRC contribution of a byte that is followed by k more bytes, so the 8 lookups are
// independent and the CPU overlaps them.
//
// Hardware: the SSE4.2 `crc32` instruction has a latency of 3 cycles and a throughput of 1 per
// cycle, so a single dependent chain runs at 1/3 of its peak. For large buffers we split the
// input into three equal blocks, run three independent chains, and combine them: the CRC of
// A||B equals shift(crc(A), |B|) xor crc(B) where shift() multiplies by x^(8|B|) mod P. We do the
// shift with a table-driven GF(2) multiplication by a constant computed once per block size.
#include "io/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <nmmintrin.h>
#define SHARDFLOW_CRC_X86 1
#endif

namespace shardflow::io::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

struct Tables {
  uint32_t t[8][256];
};

constexpr Tables MakeTables() {
  Tables tables{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    tables.t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int k = 1; k < 8; ++k) {
      const uint32_t prev = tables.t[k - 1][i];
      tables.t[k][i] = (prev >> 8) ^ tables.t[0][prev & 0xff];
    }
  }
  return tables;
}

constexpr Tables kTables = MakeTables();

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts only; TFRecord targets x86-64 and aarch64 (both LE)
}

// GF(2) polynomial arithmetic modulo P in the reflected domain, for combining CRCs.
uint32_t MultModP(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}

// x^(8n) mod P (reflected), i.e. the operator that appends n zero bytes to a CRC.
uint32_t XPow8N(uint64_t n) {
  uint32_t result = 1u << 31;  // x^0
  uint32_t power = 1u << 23;   // x^8
  while (n != 0) {
    if (n & 1) result = MultModP(power, result);
    power = MultModP(power, power);
    n >>= 1;
  }
  return result;
}

// Multiplies a CRC by a fixed constant with four 256-entry tables (one per byte of the CRC).
struct ShiftTable {
  uint32_t t[4][256];
  void Init(uint32_t constant) {
    for (int k = 0; k < 4; ++k) {
      for (uint32_t i = 0; i < 256; ++i) t[k][i] = MultModP(i << (8 * k), constant);
    }
  }
  uint32_t Apply(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
  }
};

#ifdef SHARDFLOW_CRC_X86
// Block sizes of the three-stream kernel: a long block for big buffers, a short one for the tail.
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

struct ShiftTables {
  ShiftTable long_shift;
  ShiftTable short_shift;
  ShiftTables() {
    long_shift.Init(XPow8N(kLongBlock));
    short_shift.Init(XPow8N(kShortBlock));
  }
};

const ShiftTables& GetShiftTables() {
  static const ShiftTables tables;
  return tables;
}

__attribute__((target("sse4.2"))) uint32_t HwBytes(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 8) {
    crc = static_cast<uint32_t>(_mm_crc32_u64(crc, Load64(p)));
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = _mm_crc32_u8(crc, *p++);
  return crc;
}

// Three chains over consecutive blocks of `block` bytes each; returns the CRC of all 3*block
// bytes continuing from crc.
__attribute__((target("sse4.2"))) inline uint32_t HwThreeWay(uint32_t crc, const uint8_t* p,
                                                             size_t block,
                                                             const ShiftTable& shift) {
  uint64_t c0 = crc, c1 = 0, c2 = 0;
  const uint8_t* p0 = p;
  const uint8_t* p1 = p + block;
  const uint8_t* p2 = p + 2 * block;
  for (size_t i = 0; i < block; i += 8) {
    c0 = _mm_crc32_u64(c0, Load64(p0 + i));
    c1 = _mm_crc32_u64(c1, Load64(p1 + i));
    c2 = _mm_crc32_u64(c2, Load64(p2 + i));
  }
  // crc(A||B||C) = shift(shift(cA) ^ cB) ^ cC, with chains B and C started from 0.
  uint32_t combined = shift.Apply(static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1);
  combined = shift.Apply(combined) ^ static_cast<uint32_t>(c2);
  return combined;
}
#endif

bool DetectHardware() {
#ifdef SHARDFLOW_CRC_X86
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & bit_SSE4_2) != 0;
#else
  return false;
#endif
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    c = kTables.t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    --n;
  }
  while (n >= 8) {
    const uint64_t v = Load64(p) ^ c;
    c = kTables.t[7][v & 0xff] ^ kTables.t[6][(v >> 8) & 0xff] ^ kTables.t[5][(v >> 16) & 0xff] ^
        kTables.t[4][(v >> 24) & 0xff] ^ kTables.t[3][(v >> 32) & 0xff] ^
        kTables.t[2][(v >> 40) & 0xff] ^ kTables.t[1][(v >> 48) & 0xff] ^ kTables.t[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = kTables.t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

uint32_t ExtendHardwareSingleStream(uint32_t crc, const void* data, size_t n) {
#ifdef SHARDFLOW_CRC_X86
  return ~HwBytes(~crc, static_cast<const uint8_t*>(data), n);
#else
  return ExtendPortable(crc, data, n);
#endif
}

uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n) {
#ifdef SHARDFLOW_CRC_X86
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  if (n >= 3 * kShortBlock) {
    const ShiftTables& tables = GetShiftTables();
    while (n >= 3 * kLongBlock) {
      c = HwThreeWay(c, p, kLongBlock, tables.long_shift);
      p += 3 * kLongBlock;
      n -= 3 * kLongBlock;
    }
    while (n >= 3 * kShortBlock) {
      c = HwThreeWay(c, p, kShortBlock, tables.short_shift);
      p += 3 * kShortBlock;
      n -= 3 * kShortBlock;
    }
  }
  return ~HwBytes(c, p, n);
#else
  return ExtendPortable(crc, data, n);
#endif
}

bool HardwareAvailable() {
  static const bool available = DetectHardware();
  return available;
}

const char* ImplementationName() { return HardwareAvailable() ? "sse4.2" : "portable"; }

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  static const auto impl = HardwareAvailable() ? &ExtendHardware : &ExtendPortable;
  return impl(crc, data, n);
}

}  // namespace shardflow::io::crc32c
