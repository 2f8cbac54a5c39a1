#include "comm/wire_format.hpp"

#include <bit>
#include <cstring>

#include "core/error.hpp"

namespace shardflow::comm {

// IEEE binary16. clang 14 has no _Float16 on x86 (the ThreadSanitizer build uses clang); its
// __fp16 is the same format as a storage type, converted with the same round-to-nearest-even.
#if defined(__clang__) && __clang_major__ < 15
using Half = __fp16;
#else
using Half = _Float16;
#endif
static_assert(sizeof(Half) == sizeof(uint16_t), "fp16 is 16 bits");

const char* WireFormatName(WireFormat format) {
  switch (format) {
    case WireFormat::kFloat32:
      return "float32";
    case WireFormat::kBFloat16:
      return "bf16";
    case WireFormat::kFloat16:
      return "fp16";
  }
  return "?";
}

WireFormat ParseWireFormat(const std::string& text) {
  if (text == "float32" || text == "fp32") return WireFormat::kFloat32;
  if (text == "bf16" || text == "bfloat16") return WireFormat::kBFloat16;
  if (text == "fp16" || text == "float16") return WireFormat::kFloat16;
  throw Error(ErrorCode::kInvalidArgument, "unknown wire format '" + text + "'",
              {.hint = "use float32, bf16 or fp16"});
}

size_t WireElementBytes(WireFormat format) { return format == WireFormat::kFloat32 ? 4 : 2; }

namespace {

// bf16 is the upper half of a float32. Round to nearest even: add 0x7FFF plus the lowest kept
// bit, then truncate. NaN stays NaN (quietened) instead of rounding into inf. Written as a
// select, not a branch, so the loops below vectorise; internal linkage so they inline even in
// position-independent code (an exported function may be interposed and is not inlined).
inline uint16_t ToBFloat16Bits(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (bits >> 16) | 0x0040u;
  return static_cast<uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? quiet_nan : rounded);
}
inline float FromBFloat16Bits(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}
inline uint16_t ToHalfBits(float value) {
  return std::bit_cast<uint16_t>(static_cast<Half>(value));
}
inline float FromHalfBits(uint16_t bits) {
  Half half;  // memcpy, not bit_cast: clang's __fp16 cannot be a function's return type
  std::memcpy(&half, &bits, sizeof(half));
  return static_cast<float>(half);
}

}  // namespace

uint16_t FloatToBFloat16(float value) { return ToBFloat16Bits(value); }
float BFloat16ToFloat(uint16_t bits) { return FromBFloat16Bits(bits); }

void PackToWire(WireFormat format, const float* src, size_t n, uint16_t* wire) {
  if (format == WireFormat::kBFloat16) {
    for (size_t i = 0; i < n; ++i) wire[i] = ToBFloat16Bits(src[i]);
  } else {
    for (size_t i = 0; i < n; ++i) wire[i] = ToHalfBits(src[i]);
  }
}

void UnpackFromWire(WireFormat format, const uint16_t* wire, size_t n, float* dst) {
  if (format == WireFormat::kBFloat16) {
    for (size_t i = 0; i < n; ++i) dst[i] = FromBFloat16Bits(wire[i]);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = FromHalfBits(wire[i]);
  }
}

void AccumulateFromWire(WireFormat format, const uint16_t* wire, size_t n, float* dst) {
  if (format == WireFormat::kBFloat16) {
    for (size_t i = 0; i < n; ++i) dst[i] += FromBFloat16Bits(wire[i]);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] += FromHalfBits(wire[i]);
  }
}

void RoundThroughWire(WireFormat format, float* data, size_t n) {
  if (format == WireFormat::kFloat32) return;
  if (format == WireFormat::kBFloat16) {
    for (size_t i = 0; i < n; ++i) data[i] = FromBFloat16Bits(ToBFloat16Bits(data[i]));
  } else {
    for (size_t i = 0; i < n; ++i) data[i] = FromHalfBits(ToHalfBits(data[i]));
  }
}

}  // namespace shardflow::comm
