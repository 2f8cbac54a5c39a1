#include "comm/wire_format.hpp"

#include <bit>
#include <cstring>

#include "core/error.hpp"

namespace shardflow::comm {

static_assert(sizeof(_Float16) == sizeof(uint16_t), "fp16 is 16 bits");

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

// bf16 is the upper half of a float32. Round to nearest even: add 0x7FFF plus the lowest kept
// bit, then truncate. NaN stays NaN (quietened) instead of rounding into inf.
uint16_t FloatToBFloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  const uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float BFloat16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

namespace {

inline uint16_t ToHalfBits(float value) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(value));
}
inline float FromHalfBits(uint16_t bits) {
  return static_cast<float>(std::bit_cast<_Float16>(bits));
}

}  // namespace

void PackToWire(WireFormat format, const float* src, size_t n, uint16_t* wire) {
  if (format == WireFormat::kBFloat16) {
    for (size_t i = 0; i < n; ++i) wire[i] = FloatToBFloat16(src[i]);
  } else {
    for (size_t i = 0; i < n; ++i) wire[i] = ToHalfBits(src[i]);
  }
}

void UnpackFromWire(WireFormat format, const uint16_t* wire, size_t n, float* dst) {
  if (format == WireFormat::kBFloat16) {
    for (size_t i = 0; i < n; ++i) dst[i] = BFloat16ToFloat(wire[i]);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = FromHalfBits(wire[i]);
  }
}

void AccumulateFromWire(WireFormat format, const uint16_t* wire, size_t n, float* dst) {
  if (format == WireFormat::kBFloat16) {
    for (size_t i = 0; i < n; ++i) dst[i] += BFloat16ToFloat(wire[i]);
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] += FromHalfBits(wire[i]);
  }
}

void RoundThroughWire(WireFormat format, float* data, size_t n) {
  if (format == WireFormat::kFloat32) return;
  if (format == WireFormat::kBFloat16) {
    for (size_t i = 0; i < n; ++i) data[i] = BFloat16ToFloat(FloatToBFloat16(data[i]));
  } else {
    for (size_t i = 0; i < n; ++i) data[i] = FromHalfBits(ToHalfBits(data[i]));
  }
}

}  // namespace shardflow::comm
