#include "io/idx.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

namespace shardflow::io {
namespace {

static_assert(kIdxUInt8 == 0x08 && kIdxFloat64 == 0x0E, "IDX type codes are fixed by the format");

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// gzopen reads plain files as they are ("transparent" mode), so one path serves both.
GzFile OpenForRead(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw Error(ErrorCode::kNotFound, "IDX file does not exist", {.file = path});
  }
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    throw Error(ErrorCode::kIo, std::string("cannot open IDX file: ") + std::strerror(errno),
                {.file = path});
  }
  gzbuffer(f, 1 << 18);
  return GzFile(f);
}

// Reads up to n bytes; returns how many arrived (fewer only at the end of the data). A corrupt
// gzip stream is kDataLoss.
int64_t ReadUpTo(gzFile f, void* dst, int64_t n, const std::string& path, int64_t offset) {
  auto* out = static_cast<uint8_t*>(dst);
  int64_t got = 0;
  while (got < n) {
    const unsigned want = static_cast<unsigned>(std::min<int64_t>(n - got, int64_t{1} << 30));
    const int r = gzread(f, out + got, want);
    if (r < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      throw Error(code == Z_ERRNO ? ErrorCode::kIo : ErrorCode::kDataLoss,
                  std::string("cannot read IDX data: ") + (msg ? msg : "zlib error"),
                  {.file = path, .offset = static_cast<uint64_t>(offset + got)});
    }
    if (r == 0) break;
    got += r;
  }
  return got;
}

// Counts the bytes that remain (decompressed); used only to report a size mismatch exactly.
int64_t CountRest(gzFile f, const std::string& path, int64_t offset) {
  std::vector<uint8_t> buf(1 << 20);
  int64_t total = 0;
  for (;;) {
    const int64_t r = ReadUpTo(f, buf.data(), static_cast<int64_t>(buf.size()), path, offset);
    total += r;
    if (r < static_cast<int64_t>(buf.size())) return total;
  }
}

uint32_t BigEndian32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

IdxHeader ParseHeader(gzFile f, const std::string& path) {
  IdxHeader h;
  h.gzipped = gzdirect(f) == 0;
  uint8_t magic[4];
  if (ReadUpTo(f, magic, 4, path, 0) != 4) {
    throw Error(ErrorCode::kDataLoss, "IDX file is shorter than its 4-byte magic number",
                {.file = path, .offset = 0});
  }
  h.type_code = magic[2];
  const int dims = magic[3];
  auto bad_magic = [&](const std::string& why) {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%02x%02x%02x%02x", magic[0], magic[1], magic[2], magic[3]);
    return Error(ErrorCode::kDataLoss, std::string("bad IDX magic number ") + hex + ": " + why,
                 {.file = path,
                  .offset = 0,
                  .hint = "expected 0x0000TTDD (TT type code 08/09/0B/0C/0D/0E, DD dimensions)"});
  };
  if (magic[0] != 0 || magic[1] != 0) throw bad_magic("the first two bytes must be zero");
  switch (h.type_code) {
    case kIdxUInt8:
      h.dtype = DType::kUInt8, h.element_bytes = 1;
      break;
    case kIdxInt8:
      h.dtype = DType::kInt32, h.element_bytes = 1;
      break;
    case kIdxInt16:
      h.dtype = DType::kInt32, h.element_bytes = 2;
      break;
    case kIdxInt32:
      h.dtype = DType::kInt32, h.element_bytes = 4;
      break;
    case kIdxFloat32:
      h.dtype = DType::kFloat32, h.element_bytes = 4;
      break;
    case kIdxFloat64:
      h.dtype = DType::kFloat64, h.element_bytes = 8;
      break;
    default:
      throw bad_magic("unknown element type code");
  }
  if (dims < 1 || dims > kIdxMaxDims) {
    throw bad_magic("dimension count " + std::to_string(dims) + " is not in 1.." +
                    std::to_string(kIdxMaxDims));
  }
  h.header_bytes = 4 + 4 * int64_t{dims};
  uint8_t sizes[4 * kIdxMaxDims];
  if (ReadUpTo(f, sizes, 4 * dims, path, 4) != 4 * dims) {
    throw Error(ErrorCode::kDataLoss,
                "truncated IDX header: expected " + std::to_string(h.header_bytes) + " bytes",
                {.file = path, .offset = 4});
  }
  int64_t bytes = h.element_bytes;
  for (int i = 0; i < dims; ++i) {
    const int64_t d = BigEndian32(sizes + 4 * i);
    h.shape.push_back(d);
    if (d != 0 && bytes > (int64_t{1} << 50) / d) {
      throw Error(ErrorCode::kDataLoss,
                  "IDX header declares an implausibly large shape " + ShapeToString(h.shape),
                  {.file = path, .offset = 4});
    }
    bytes *= d;
  }
  return h;
}

// The size the gzip trailer records (ISIZE: the uncompressed size modulo 2^32).
uint32_t GzipTrailerSize(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const auto end = static_cast<int64_t>(in.tellg());
  if (end < 4) return 0;
  in.seekg(end - 4);
  uint8_t b[4] = {};
  in.read(reinterpret_cast<char*>(b), 4);
  return uint32_t{b[0]} | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
}

Error SizeMismatch(const std::string& path, const IdxHeader& h, int64_t actual) {
  return Error(ErrorCode::kDataLoss,
               std::string(actual < h.file_bytes() ? "truncated" : "oversized") +
                   " IDX file: header declares shape " + ShapeToString(h.shape) + ", expected " +
                   std::to_string(h.file_bytes()) + " bytes" + (h.gzipped ? " decompressed" : "") +
                   ", found " + std::to_string(actual),
               {.file = path});
}

// Converts big-endian file elements (already in the tensor's buffer, or in `raw` for widened
// types) to the tensor's native layout.
void ToNative(const IdxHeader& h, const std::vector<uint8_t>& raw, Tensor* t) {
  const int64_t n = t->num_elements();
  if (h.type_code == kIdxInt8) {
    for (int64_t i = 0; i < n; ++i) t->data<int32_t>()[i] = static_cast<int8_t>(raw[i]);
  } else if (h.type_code == kIdxInt16) {
    for (int64_t i = 0; i < n; ++i) {
      t->data<int32_t>()[i] = static_cast<int16_t>((raw[2 * i] << 8) | raw[2 * i + 1]);
    }
  } else if (h.element_bytes == 4) {
    auto* p = static_cast<uint32_t*>(t->raw_data());
    for (int64_t i = 0; i < n; ++i) p[i] = __builtin_bswap32(p[i]);
  } else if (h.element_bytes == 8) {
    auto* p = static_cast<uint64_t*>(t->raw_data());
    for (int64_t i = 0; i < n; ++i) p[i] = __builtin_bswap64(p[i]);
  }
}

}  // namespace

IdxHeader ReadIdxHeader(const std::string& path) {
  GzFile f = OpenForRead(path);
  return ParseHeader(f.get(), path);
}

Tensor ReadIdx(const std::string& path, const IdxExpect& expect) {
  GzFile f = OpenForRead(path);
  const IdxHeader h = ParseHeader(f.get(), path);
  // Validate the size before allocating: the header may be corrupt.
  if (!h.gzipped) {
    const auto actual = static_cast<int64_t>(std::filesystem::file_size(path));
    if (actual != h.file_bytes()) throw SizeMismatch(path, h, actual);
  } else if (GzipTrailerSize(path) != static_cast<uint32_t>(h.file_bytes())) {
    throw SizeMismatch(path, h, h.header_bytes + CountRest(f.get(), path, h.header_bytes));
  }
  if (expect.dtype && *expect.dtype != h.dtype) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("IDX file: expected dtype ") + DTypeName(*expect.dtype) + ", found " +
                    DTypeName(h.dtype),
                {.file = path});
  }
  if (expect.shape) {
    bool match = expect.shape->size() == h.shape.size();
    for (size_t i = 0; match && i < h.shape.size(); ++i) {
      match = (*expect.shape)[i] == -1 || (*expect.shape)[i] == h.shape[i];
    }
    if (!match) {
      throw Error(ErrorCode::kInvalidArgument,
                  "IDX file: expected shape " + ShapeToString(*expect.shape) + ", found " +
                      ShapeToString(h.shape),
                  {.file = path});
    }
  }
  Tensor t(h.dtype, h.shape);
  const bool widened = h.type_code == kIdxInt8 || h.type_code == kIdxInt16;
  std::vector<uint8_t> raw(widened ? static_cast<size_t>(h.data_bytes()) : 0);
  void* dst = widened ? raw.data() : t.raw_data();
  const int64_t got = ReadUpTo(f.get(), dst, h.data_bytes(), path, h.header_bytes);
  if (got != h.data_bytes()) throw SizeMismatch(path, h, h.header_bytes + got);
  uint8_t extra = 0;
  if (ReadUpTo(f.get(), &extra, 1, path, h.file_bytes()) != 0) {
    throw SizeMismatch(path, h, h.file_bytes() + 1 + CountRest(f.get(), path, h.file_bytes() + 1));
  }
  ToNative(h, raw, &t);
  return t;
}

void WriteIdx(const std::string& path, const Tensor& tensor, bool gzip) {
  uint8_t code = 0;
  switch (tensor.dtype()) {
    case DType::kUInt8:
      code = kIdxUInt8;
      break;
    case DType::kInt32:
      code = kIdxInt32;
      break;
    case DType::kFloat32:
      code = kIdxFloat32;
      break;
    case DType::kFloat64:
      code = kIdxFloat64;
      break;
    case DType::kInt64:
      throw Error(ErrorCode::kInvalidArgument, "IDX has no 64-bit integer type", {.file = path});
  }
  if (tensor.rank() < 1 || tensor.rank() > static_cast<size_t>(kIdxMaxDims)) {
    throw Error(ErrorCode::kInvalidArgument,
                "IDX holds 1.." + std::to_string(kIdxMaxDims) + " dimensions, tensor has shape " +
                    ShapeToString(tensor.shape()),
                {.file = path});
  }
  std::vector<uint8_t> header = {0, 0, code, static_cast<uint8_t>(tensor.rank())};
  for (int64_t d : tensor.shape()) {
    const auto u = static_cast<uint32_t>(d);
    for (int s = 24; s >= 0; s -= 8) header.push_back(static_cast<uint8_t>(u >> s));
  }
  gzFile f = gzopen(path.c_str(), gzip ? "wb6" : "wbT");  // T: plain, no gzip wrapper
  if (f == nullptr) {
    throw Error(ErrorCode::kIo, std::string("cannot create IDX file: ") + std::strerror(errno),
                {.file = path});
  }
  GzFile owner(f);
  auto write = [&](const void* p, size_t n) {
    if (n > 0 && gzwrite(f, p, static_cast<unsigned>(n)) != static_cast<int>(n)) {
      int code_ = 0;
      throw Error(ErrorCode::kIo, std::string("cannot write IDX file: ") + gzerror(f, &code_),
                  {.file = path});
    }
  };
  write(header.data(), header.size());
  // Elements go out big-endian, converted a block at a time.
  const size_t elem = DTypeSize(tensor.dtype());
  const auto* src = static_cast<const uint8_t*>(tensor.raw_data());
  std::vector<uint8_t> block(1 << 20);
  for (size_t off = 0; off < tensor.byte_size(); off += block.size()) {
    const size_t n = std::min(block.size(), tensor.byte_size() - off);
    for (size_t i = 0; i < n; i += elem) {
      for (size_t b = 0; b < elem; ++b) block[i + b] = src[off + i + elem - 1 - b];
    }
    write(block.data(), n);
  }
  gzFile raw = owner.release();
  if (gzclose(raw) != Z_OK) {
    throw Error(ErrorCode::kIo, "cannot finish IDX file", {.file = path});
  }
}

IdxImagesLabels ReadIdxImagesLabels(const std::string& images_path,
                                    const std::string& labels_path) {
  IdxImagesLabels out;
  out.images = ReadIdx(images_path, {.dtype = DType::kUInt8, .shape = Shape{-1, -1, -1}});
  out.labels = ReadIdx(labels_path, {.dtype = DType::kUInt8, .shape = Shape{-1}});
  if (out.images.dim(0) != out.labels.dim(0)) {
    throw Error(ErrorCode::kInvalidArgument,
                "IDX images file has " + std::to_string(out.images.dim(0)) +
                    " images but labels file " + labels_path + " has " +
                    std::to_string(out.labels.dim(0)) + " labels",
                {.file = images_path});
  }
  return out;
}

IdxImagesLabels ReadFashionMnist(const std::string& split, const std::string& dir) {
  if (split != "train" && split != "t10k") {
    throw Error(ErrorCode::kInvalidArgument,
                "Fashion-MNIST split must be 'train' or 't10k', got '" + split + "'",
                {.file = dir});
  }
  return ReadIdxImagesLabels(dir + "/" + split + "-images-idx3-ubyte.gz",
                             dir + "/" + split + "-labels-idx1-ubyte.gz");
}

}  // namespace shardflow::io
