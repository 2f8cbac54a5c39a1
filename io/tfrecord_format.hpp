// The TFRecord file format (TensorFlow's record framing), in one place.
//
// A file is a sequence of records, each:
//
//   uint64  length            little-endian, number of data bytes
//   uint32  masked_crc(length) masked CRC32C of the 8 length bytes
//   byte    data[length]
//   uint32  masked_crc(data)   masked CRC32C of the data
//
// masked_crc(x) = ((c >> 15) | (c << 17)) + 0xa282ead8 with c = CRC32C(x) (io/crc32c.hpp).
// There is no file header, no padding and no index: a record boundary can only be found by
// checking that a candidate header's length CRC and the following data CRC both verify.
// Compression (GZIP or ZLIB) applies to the whole stream of records, never per record.
// Data is usually a serialized tf.train.Example (io/example.hpp) but may be any bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace shardflow::io::tfrecord {

constexpr size_t kLengthSize = 8;
constexpr size_t kLengthCrcSize = 4;
constexpr size_t kHeaderSize = kLengthSize + kLengthCrcSize;
constexpr size_t kFooterSize = 4;
// Bytes a record occupies beyond its data.
constexpr size_t kFramingSize = kHeaderSize + kFooterSize;

static_assert(kHeaderSize == 12, "TFRecord header is length(8) + masked CRC(4)");
static_assert(kFramingSize == 16, "TFRecord framing is 16 bytes per record");

// Little-endian loads and stores of the framing fields (the format is little-endian on every
// host; shardflow supports little-endian hosts only).
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline void EncodeFixed64(char* p, uint64_t v) { std::memcpy(p, &v, sizeof(v)); }
inline void EncodeFixed32(char* p, uint32_t v) { std::memcpy(p, &v, sizeof(v)); }

}  // namespace shardflow::io::tfrecord
