// IDX: the file format of MNIST and Fashion-MNIST, read into (and written from) Tensors.
//
// Layout (all integers big-endian):
//   bytes 0-1  zero
//   byte  2    element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32, 0x0D float32,
//              0x0E float64
//   byte  3    number of dimensions d (1..kIdxMaxDims)
//   then d uint32 sizes, then the elements, row-major, big-endian.
// A file may be gzip-compressed as a whole (the .gz files of the data sets); compression is
// detected from the content (gzip's magic bytes), not the name.
//
// Element types map onto tensor dtypes: uint8 -> kUInt8, int32 -> kInt32, float32 -> kFloat32,
// float64 -> kFloat64; int8 and int16 are widened to kInt32.
//
// A file is accepted only when its size is exactly what its header declares: a short file is a
// kDataLoss error naming the file and the expected and actual sizes (for gzip, the decompressed
// size); so is a longer one. A wrong magic number is kDataLoss at offset 0.
//
// Thread-safety: the functions are reentrant (no shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/tensor.hpp"

namespace shardflow::io {

inline constexpr int kIdxMaxDims = 8;
inline constexpr uint8_t kIdxUInt8 = 0x08;
inline constexpr uint8_t kIdxInt8 = 0x09;
inline constexpr uint8_t kIdxInt16 = 0x0B;
inline constexpr uint8_t kIdxInt32 = 0x0C;
inline constexpr uint8_t kIdxFloat32 = 0x0D;
inline constexpr uint8_t kIdxFloat64 = 0x0E;

// The Debian package dataset-fashion-mnist installs the data set here:
// {train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

struct IdxHeader {
  uint8_t type_code = 0;        // kIdxUInt8, ...
  DType dtype = DType::kUInt8;  // the tensor dtype it is read as
  Shape shape;
  int64_t header_bytes = 0;   // 4 + 4 * rank
  int64_t element_bytes = 0;  // size of one element in the file
  bool gzipped = false;
  int64_t data_bytes() const { return NumElements(shape) * element_bytes; }
  int64_t file_bytes() const { return header_bytes + data_bytes(); }  // decompressed
};

// Reads and validates the header only.
IdxHeader ReadIdxHeader(const std::string& path);

// What a caller expects; unset fields are not checked (kInvalidArgument on mismatch, naming
// expected and found).
struct IdxExpect {
  std::optional<DType> dtype;
  std::optional<Shape> shape;  // a dimension of -1 matches any size
};

// The whole file as one tensor of the header's shape.
Tensor ReadIdx(const std::string& path, const IdxExpect& expect = {});

// Writes `tensor` as IDX (type from its dtype; int64 is refused: IDX has no 64-bit integers),
// gzip-compressed at level 6 when `gzip`. Throws kIo naming the file on a write failure.
void WriteIdx(const std::string& path, const Tensor& tensor, bool gzip);

// An images file and its labels file: uint8 [N, H, W] and uint8 [N]. Throws kInvalidArgument
// naming both files when their counts differ.
struct IdxImagesLabels {
  Tensor images;
  Tensor labels;
};
IdxImagesLabels ReadIdxImagesLabels(const std::string& images_path, const std::string& labels_path);

// Fashion-MNIST split "train" (60000) or "t10k" (10000) from `dir`.
IdxImagesLabels ReadFashionMnist(const std::string& split,
                                 const std::string& dir = kFashionMnistDir);

}  // namespace shardflow::io
