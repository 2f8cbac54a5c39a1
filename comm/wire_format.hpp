// The element format of all-reduce traffic. kFloat32 sends the buffer as it is; kBFloat16 and
// kFloat16 halve the bytes on the wire: a sender rounds each float to 16 bits (round to nearest
// even), a receiver widens back to float and accumulates in float32. Precision: bf16 keeps 8
// significant bits (relative error <= 2^-9 per rounding), fp16 keeps 11 bits but only the range
// +-65504 (larger magnitudes become inf). Each hop of a ring rounds once, so the error of a sum
// over n ranks grows with n; use 16-bit wire formats for gradients, not for exact sums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace shardflow::comm {

enum class WireFormat { kFloat32, kBFloat16, kFloat16 };

// "float32" | "bf16" | "fp16"; Parse throws Error(kInvalidArgument) naming the value.
const char* WireFormatName(WireFormat format);
WireFormat ParseWireFormat(const std::string& text);
// Bytes per element on the wire (4 or 2).
size_t WireElementBytes(WireFormat format);

// The loops below are simple element-wise loops the compiler vectorises (F16C/AVX2 at
// x86-64-v3). `wire` points at n 16-bit elements of the given format.
// REQUIRES: format is kBFloat16 or kFloat16.
void PackToWire(WireFormat format, const float* src, size_t n, uint16_t* wire);
// dst[i] = widen(wire[i])
void UnpackFromWire(WireFormat format, const uint16_t* wire, size_t n, float* dst);
// dst[i] += widen(wire[i])
void AccumulateFromWire(WireFormat format, const uint16_t* wire, size_t n, float* dst);
// data[i] = widen(narrow(data[i])): what every rank would read back from the wire.
void RoundThroughWire(WireFormat format, float* data, size_t n);

// Scalar conversions (exposed for the tests' naive twins).
uint16_t FloatToBFloat16(float value);
float BFloat16ToFloat(uint16_t bits);

}  // namespace shardflow::comm
