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
//
// Carry-less multiplication (AVX-512 VPCLMULQDQ), where the CPU has it: the crc32 instruction
// tops out at 8 bytes per cycle (~30 GB/s), which is slower than the kernel copies page-cache
// data into a read buffer. Folding instead keeps 16 lanes of 128 bits (four 512-bit registers,
// 256 bytes). A 128-bit lane A that lies F bits before the lane it is folded into contributes
// A(x) * x^F to the message polynomial; splitting A into its two 64-bit halves,
// A(x) * x^F = Hi(x) * x^(F+64) + Lo(x) * x^F, and each half times (x^k mod P) is one carry-less
// 64x64 multiplication whose 96-bit result is congruent (mod P) to the original contribution. So
// each step folds 256 input bytes into the accumulators with two multiplications and one
// three-way XOR per register. At the end the 16 lanes are folded into the last one, and that
// 16-byte value, having the same remainder as the whole prefix, is run through the crc32
// instruction. The bit order is reflected: register bit k of a lane is x^(127-k), so a product
// of two 64-bit values lands shifted by one bit, which the constants absorb (x^(F+63), x^(F-1)
// instead of x^(F+64), x^F). The starting CRC is XORed into the first 4 bytes, which is how the
// crc32 instruction itself applies its input CRC. Folding alone is bound by the multiplier
// (~70 GB/s in L2 here); interleaving three crc32 chains over a separate part of each super
// block (HybridBlock) uses the integer unit at the same time (~95 GB/s).
#include "io/crc32c.hpp"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
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

// x^n mod P for any number of bits n.
[[maybe_unused]] uint32_t XPowN(uint64_t n) {
  uint32_t result = 1u << 31;  // x^0
  uint32_t power = 1u << 30;   // x^1
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

#ifdef SHARDFLOW_CRC_X86
// Folding constants for a distance of F bits, as 64-bit operands of the carry-less multiply:
// (low half: x^(F+63) mod P, high half: x^(F-1) mod P), each a 32-bit remainder placed in the
// upper 32 bits (bit 63-d holds the coefficient of x^d).
struct FoldPair {
  uint64_t lo, hi;
};
FoldPair FoldConstants(uint64_t f_bits) {
  return {uint64_t{XPowN(f_bits + 63)} << 32, uint64_t{XPowN(f_bits - 1)} << 32};
}

constexpr int kFoldRegs = 4;                   // 512-bit accumulators
constexpr int kFoldLanes = 4 * kFoldRegs;      // 128-bit lanes
constexpr size_t kFoldBlock = 64 * kFoldRegs;  // bytes folded per step

struct FoldTables {
  FoldPair step;                  // F = kFoldBlock bytes
  FoldPair lane[kFoldLanes - 1];  // lane t of the last block into the last lane
  FoldTables() {
    step = FoldConstants(kFoldBlock * 8);
    for (int t = 0; t < kFoldLanes - 1; ++t)
      lane[t] = FoldConstants(static_cast<uint64_t>(kFoldLanes - 1 - t) * 128);
  }
};

const FoldTables& GetFoldTables() {
  static const FoldTables tables;
  return tables;
}

// Folds the 16 lanes of the last block into the last lane and runs that 16-byte value through
// the crc32 instruction: the CRC register after the whole folded prefix.
__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2"))) inline uint32_t ReduceLanes(
    const __m512i* acc, const FoldTables& tables) {
  alignas(64) uint64_t lanes[2 * kFoldLanes];
  for (int r = 0; r < kFoldRegs; ++r) _mm512_store_si512(lanes + 8 * r, acc[r]);
  __m128i v = _mm_load_si128(reinterpret_cast<const __m128i*>(lanes + 2 * (kFoldLanes - 1)));
  for (int t = 0; t < kFoldLanes - 1; ++t) {
    const __m128i x = _mm_load_si128(reinterpret_cast<const __m128i*>(lanes + 2 * t));
    const __m128i kt = _mm_set_epi64x(static_cast<long long>(tables.lane[t].hi),
                                      static_cast<long long>(tables.lane[t].lo));
    v = _mm_xor_si128(
        v, _mm_xor_si128(_mm_clmulepi64_si128(x, kt, 0x00), _mm_clmulepi64_si128(x, kt, 0x11)));
  }
  uint64_t c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(v)));
  c = _mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(v, 1)));
  return static_cast<uint32_t>(c);
}

// CRC register after `crc` (internal, not inverted) and n bytes, n a positive multiple of
// kFoldBlock. Accumulator r holds bytes [64r, 64r + 64) of the current block.
__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2"))) uint32_t FoldBlocks(uint32_t crc,
                                                                                const uint8_t* p,
                                                                                size_t n) {
  const FoldTables& tables = GetFoldTables();
  const auto klo = static_cast<long long>(tables.step.lo);
  const auto khi = static_cast<long long>(tables.step.hi);
  const __m512i k = _mm512_set_epi64(khi, klo, khi, klo, khi, klo, khi, klo);
  __m512i acc[kFoldRegs];
  for (int r = 0; r < kFoldRegs; ++r) acc[r] = _mm512_loadu_si512(p + 64 * r);
  acc[0] =
      _mm512_xor_si512(acc[0], _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, static_cast<long long>(crc)));
  for (size_t i = kFoldBlock; i < n; i += kFoldBlock) {
    const uint8_t* q = p + i;
    for (int r = 0; r < kFoldRegs; ++r) {
      acc[r] = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc[r], k, 0x00),
                                         _mm512_clmulepi64_epi128(acc[r], k, 0x11),
                                         _mm512_loadu_si512(q + 64 * r), 0x96);
    }
  }
  return ReduceLanes(acc, tables);
}

// Folding keeps the vector unit busy, the crc32 instruction runs on the integer unit: a super
// block runs both at once. Its first kHybridFold bytes are folded while three crc32 chains, 5
// instructions each per folding step, walk the three kHybridChain-byte segments after them
// (started from 0); the results combine as crc(A||B1||B2||B3) = shift(crc(A), 3L) ^
// shift(crc(B1), 2L) ^ shift(crc(B2), L) ^ crc(B3), L = kHybridChain, shift = times x^(8L).
constexpr size_t kHybridSteps = 64;
constexpr size_t kHybridFold = kHybridSteps * kFoldBlock;  // 16 KiB
constexpr size_t kHybridChainStep = 40;                    // 5 x 8 bytes per chain and step
constexpr size_t kHybridChain = kHybridSteps * kHybridChainStep;
constexpr size_t kHybridBlock = kHybridFold + 3 * kHybridChain;

struct HybridTables {
  ShiftTable shift1, shift2, shift3;
  HybridTables() {
    shift1.Init(XPow8N(kHybridChain));
    shift2.Init(XPow8N(2 * kHybridChain));
    shift3.Init(XPow8N(3 * kHybridChain));
  }
};

const HybridTables& GetHybridTables() {
  static const HybridTables tables;
  return tables;
}

// CRC register after `crc` (internal) and the kHybridBlock bytes at p.
__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2"))) uint32_t HybridBlock(uint32_t crc,
                                                                                 const uint8_t* p) {
  const FoldTables& tables = GetFoldTables();
  const auto klo = static_cast<long long>(tables.step.lo);
  const auto khi = static_cast<long long>(tables.step.hi);
  const __m512i k = _mm512_set_epi64(khi, klo, khi, klo, khi, klo, khi, klo);
  const uint8_t* b1 = p + kHybridFold;
  const uint8_t* b2 = b1 + kHybridChain;
  const uint8_t* b3 = b2 + kHybridChain;
  uint64_t c1 = 0, c2 = 0, c3 = 0;
  __m512i acc[kFoldRegs];
  for (int r = 0; r < kFoldRegs; ++r) acc[r] = _mm512_loadu_si512(p + 64 * r);
  acc[0] =
      _mm512_xor_si512(acc[0], _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, static_cast<long long>(crc)));
  for (size_t j = 0; j < kHybridChainStep; j += 8) {
    c1 = _mm_crc32_u64(c1, Load64(b1 + j));
    c2 = _mm_crc32_u64(c2, Load64(b2 + j));
    c3 = _mm_crc32_u64(c3, Load64(b3 + j));
  }
  for (size_t i = 1; i < kHybridSteps; ++i) {
    const uint8_t* q = p + i * kFoldBlock;
    for (int r = 0; r < kFoldRegs; ++r) {
      acc[r] = _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(acc[r], k, 0x00),
                                         _mm512_clmulepi64_epi128(acc[r], k, 0x11),
                                         _mm512_loadu_si512(q + 64 * r), 0x96);
    }
    const size_t o = i * kHybridChainStep;
    for (size_t j = 0; j < kHybridChainStep; j += 8) {
      c1 = _mm_crc32_u64(c1, Load64(b1 + o + j));
      c2 = _mm_crc32_u64(c2, Load64(b2 + o + j));
      c3 = _mm_crc32_u64(c3, Load64(b3 + o + j));
    }
  }
  const HybridTables& h = GetHybridTables();
  const uint32_t a = ReduceLanes(acc, tables);
  return h.shift3.Apply(a) ^ h.shift2.Apply(static_cast<uint32_t>(c1)) ^
         h.shift1.Apply(static_cast<uint32_t>(c2)) ^ static_cast<uint32_t>(c3);
}

bool DetectFolding() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
         __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2");
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

uint32_t ExtendFolding(uint32_t crc, const void* data, size_t n) {
#ifdef SHARDFLOW_CRC_X86
  const auto* p = static_cast<const uint8_t*>(data);
  if (n < kFoldMinBytes) return ExtendHardware(crc, p, n);
  uint32_t c = ~crc;
  while (n >= kHybridBlock) {
    c = HybridBlock(c, p);
    p += kHybridBlock;
    n -= kHybridBlock;
  }
  if (n >= kFoldBlock) {
    const size_t bulk = n - n % kFoldBlock;
    c = FoldBlocks(c, p, bulk);
    p += bulk;
    n -= bulk;
  }
  return ExtendHardware(~c, p, n);
#else
  return ExtendPortable(crc, data, n);
#endif
}

bool FoldingAvailable() {
#ifdef SHARDFLOW_CRC_X86
  static const bool available = DetectFolding();
  return available;
#else
  return false;
#endif
}

bool HardwareAvailable() {
  static const bool available = DetectHardware();
  return available;
}

const char* ImplementationName() {
  return FoldingAvailable() ? "avx512-vpclmulqdq" : HardwareAvailable() ? "sse4.2" : "portable";
}

uint32_t Extend(uint32_t crc, const void* data, size_t n) {
  static const auto impl = FoldingAvailable()    ? &ExtendFolding
                           : HardwareAvailable() ? &ExtendHardware
                                                 : &ExtendPortable;
  return impl(crc, data, n);
}

}  // namespace shardflow::io::crc32c
