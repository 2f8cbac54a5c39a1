#include "io/pipeline/iterator_state.hpp"

#include <cstring>

namespace shardflow::pipeline {

void StateWriter::WriteU64(uint64_t v) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  data_.append(bytes, 8);
}

void StateWriter::WriteString(const std::string& s) {
  WriteU64(s.size());
  data_.append(s);
}

void StateWriter::WriteTensor(const Tensor& t) {
  WriteU64(static_cast<uint64_t>(t.dtype()));
  WriteU64(t.rank());
  for (int64_t d : t.shape()) WriteI64(d);
  WriteU64(t.byte_size());
  data_.append(static_cast<const char*>(t.raw_data()), t.byte_size());
}

void StateWriter::WriteElement(const Element& e) {
  WriteI64(e.id);
  WriteString(e.where.FileName());
  WriteI64(e.where.file_index);
  WriteI64(e.where.record);
  WriteU64(e.where.offset);
  WriteU64(e.features.size());
  for (const auto& [name, tensor] : e.features) {
    WriteString(name);
    WriteTensor(tensor);
  }
}

void StateReader::Need(size_t n) const {
  if (n > data_.size() - pos_) {
    throw Error(ErrorCode::kDataLoss, "iterator state blob is truncated",
                {.offset = pos_, .hint = "the blob was cut or comes from another pipeline"});
  }
}

uint64_t StateReader::ReadU64() {
  Need(8);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
  }
  pos_ += 8;
  return v;
}

std::string StateReader::ReadString() {
  uint64_t n = ReadU64();
  Need(n);
  std::string s = data_.substr(pos_, n);
  pos_ += n;
  return s;
}

Tensor StateReader::ReadTensor() {
  uint64_t dtype = ReadU64();
  if (dtype > static_cast<uint64_t>(DType::kInt64)) {
    throw Error(ErrorCode::kDataLoss, "iterator state blob has an invalid dtype", {.offset = pos_});
  }
  uint64_t rank = ReadU64();
  if (rank > 16) {
    throw Error(ErrorCode::kDataLoss, "iterator state blob has an invalid tensor rank",
                {.offset = pos_});
  }
  Shape shape;
  for (uint64_t i = 0; i < rank; ++i) {
    int64_t d = ReadI64();
    if (d < 0) throw Error(ErrorCode::kDataLoss, "negative dimension in state", {.offset = pos_});
    shape.push_back(d);
  }
  uint64_t bytes = ReadU64();
  Need(bytes);
  Tensor t(static_cast<DType>(dtype), shape);
  if (t.byte_size() != bytes) {
    throw Error(ErrorCode::kDataLoss, "iterator state tensor size does not match its shape",
                {.offset = pos_});
  }
  if (bytes > 0) std::memcpy(t.raw_data(), data_.data() + pos_, bytes);
  pos_ += bytes;
  return t;
}

Element StateReader::ReadElement() {
  Element e;
  e.id = ReadI64();
  std::string file = ReadString();
  if (!file.empty()) e.where.file = std::make_shared<const std::string>(std::move(file));
  e.where.file_index = ReadI64();
  e.where.record = ReadI64();
  e.where.offset = ReadU64();
  uint64_t n = ReadU64();
  for (uint64_t i = 0; i < n; ++i) {
    std::string name = ReadString();
    e.features.emplace_back(std::move(name), ReadTensor());
  }
  return e;
}

void StateReader::ExpectTag(const std::string& stage) {
  size_t at = pos_;
  std::string tag = ReadString();
  if (tag != stage) {
    throw Error(ErrorCode::kInvalidArgument,
                "iterator state does not match the pipeline: expected stage '" + stage +
                    "', found '" + tag + "'",
                {.offset = at});
  }
}

}  // namespace shardflow::pipeline
