// IteratorState: the serializable blob that lets an iterator resume exactly where it stopped.
//
// Every iterator writes its own state (file positions, buffered elements, shuffle buffer and
// RNG counters, epoch) into a StateWriter in a fixed order and reads it back in the same order
// from a StateReader. The blob is versioned and tagged with a hash of the pipeline description,
// so restoring a blob into a different pipeline is refused (kInvalidArgument) instead of
// silently resuming the wrong stream. Integers are little-endian fixed width; tensors are
// dtype, shape and raw bytes. A truncated or garbled blob is kDataLoss, never a crash.
// Thread-safety: none (one writer or reader per save/restore).
#pragma once

#include <cstdint>
#include <string>

#include "core/tensor.hpp"
#include "io/pipeline/element.hpp"

namespace shardflow::pipeline {

class StateWriter {
 public:
  void WriteU64(uint64_t v);
  void WriteI64(int64_t v) { WriteU64(static_cast<uint64_t>(v)); }
  void WriteBool(bool v) { WriteU64(v ? 1 : 0); }
  void WriteString(const std::string& s);
  void WriteTensor(const Tensor& t);
  void WriteElement(const Element& e);
  // A section tag: readers check it, so a misaligned restore fails loudly at the stage.
  void WriteTag(const std::string& stage) { WriteString(stage); }
  const std::string& data() const { return data_; }
  std::string Release() { return std::move(data_); }

 private:
  std::string data_;
};

class StateReader {
 public:
  // REQUIRES: `data` outlives the reader (it is not copied).
  explicit StateReader(const std::string& data) : data_(data) {}
  explicit StateReader(std::string&&) = delete;
  uint64_t ReadU64();
  int64_t ReadI64() { return static_cast<int64_t>(ReadU64()); }
  bool ReadBool() { return ReadU64() != 0; }
  std::string ReadString();
  Tensor ReadTensor();
  Element ReadElement();
  // Throws Error(kInvalidArgument) when the next tag is not `stage`.
  void ExpectTag(const std::string& stage);
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  void Need(size_t n) const;
  const std::string& data_;
  size_t pos_ = 0;
};

}  // namespace shardflow::pipeline
