// CRC32C (Castagnoli polynomial 0x1EDC6F41, reflected 0x82F63B78), as used by TFRecord framing.
//
// Extend() picks its implementation once, at first use, with cpuid: carry-less multiplication
// folding (AVX-512 VPCLMULQDQ) for the bulk of large buffers when the CPU has it, else the SSE4.2
// `crc32` instruction (three interleaved streams for large buffers), else a portable
// slicing-by-8 table. Both are exposed so tests can check them against each other.
// Thread-safe: all functions are pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace shardflow::io::crc32c {

// CRC32C of `data` continuing from `crc` (the CRC of the bytes before it; 0 to start).
uint32_t Extend(uint32_t crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

// The individual implementations. ExtendHardware REQUIRES HardwareAvailable().
uint32_t ExtendPortable(uint32_t crc, const void* data, size_t n);
uint32_t ExtendHardware(uint32_t crc, const void* data, size_t n);
// One stream of the crc32 instruction, 8 bytes at a time: the benchmark's baseline.
uint32_t ExtendHardwareSingleStream(uint32_t crc, const void* data, size_t n);
bool HardwareAvailable();
// Folding with VPCLMULQDQ for buffers of at least kFoldMinBytes (the rest, and shorter buffers,
// through ExtendHardware). REQUIRES FoldingAvailable() (which implies HardwareAvailable()).
inline constexpr size_t kFoldMinBytes = 1024;
uint32_t ExtendFolding(uint32_t crc, const void* data, size_t n);
bool FoldingAvailable();
// "avx512-vpclmulqdq", "sse4.2" or "portable": what Extend() uses.
const char* ImplementationName();

// TFRecord stores masked CRCs so that a CRC computed over data that itself contains CRCs is
// still well distributed: rotate right by 15 bits and add a constant.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
constexpr uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
constexpr uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}
static_assert(Unmask(Mask(0x12345678u)) == 0x12345678u);

}  // namespace shardflow::io::crc32c
