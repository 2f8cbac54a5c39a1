// tf.train.Example: a zero-copy parser and a serializer.
//
// The wire format (tensorflow/core/example/{example,feature}.proto):
//   Example   { Features features = 1; }
//   Features  { map<string, Feature> feature = 1; }   // entries: { string key = 1; Feature value =
//   2; } Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                            Int64List int64_list = 3; } }
//   BytesList { repeated bytes value = 1; }
//   FloatList { repeated float value = 1 [packed = true]; }
//   Int64List { repeated int64 value = 1 [packed = true]; }
//
// ParseExample walks the wire format once and records, per feature, its name and the bytes of
// its value list as views into the serialized Example: no allocation per feature (the
// ExampleView's vector is reused across calls). It validates everything it will later decode:
// packed and unpacked encodings (and mixtures) are accepted, unknown fields of every wire type
// (groups included) are skipped, and invalid wire types, a known field with the wrong wire type,
// malformed varints and lengths running past their message are rejected with kDataLoss naming
// the byte offset. Map semantics follow protobuf: a repeated key keeps the last entry; a Feature
// whose oneof is set twice keeps the last kind. (Protobuf would concatenate a list given twice
// with the same kind; that split encoding is never written by TensorFlow and is rejected here.)
//
// Thread-safety: ExampleView is used by one thread at a time; the parser has no global state.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace shardflow::io {

enum class FeatureKind : uint8_t { kNone, kBytes, kFloat, kInt64 };
// "none" | "bytes" | "float" | "int64"
const char* FeatureKindName(FeatureKind kind);

// One feature of a parsed Example. Views into the serialized bytes: valid while they live.
struct FeatureView {
  std::string_view name;
  FeatureKind kind = FeatureKind::kNone;  // kNone: a Feature with no list set
  std::string_view list;                  // the BytesList/FloatList/Int64List message body
  int64_t num_values = 0;
  uint64_t total_bytes = 0;  // bytes lists: the sum of the values' lengths

  // Decoders. REQUIRES: the kind matches and `out` has room for num_values values (for bytes,
  // total_bytes). They cannot fail: ParseExample validated the list.
  void CopyFloats(float* out) const;
  void CopyInt64s(int64_t* out) const;
  // Concatenates the bytes values.
  void CopyBytes(uint8_t* out) const;
  // Calls fn(std::string_view) for each bytes value.
  template <typename Fn>
  void ForEachBytes(Fn&& fn) const;
};

class ExampleView {
 public:
  const std::vector<FeatureView>& features() const { return features_; }
  // nullptr when absent. Linear search: Examples have few features.
  const FeatureView* Find(std::string_view name) const;

 private:
  friend Status ParseExample(std::string_view, ExampleView*, const struct RecordLocation*);
  std::vector<FeatureView> features_;
};

// Where a serialized Example came from, for error messages.
struct RecordLocation {
  std::string_view file;
  uint64_t data_offset = 0;  // file offset of the Example's first byte
  int64_t record = -1;       // record index; -1 unknown
};

// Parses `serialized` into *out (replacing its contents). On error returns kDataLoss whose
// context names the byte offset: in the file when `where` is given (data_offset + position),
// else within the Example, and the file and record from `where`.
Status ParseExample(std::string_view serialized, ExampleView* out,
                    const RecordLocation* where = nullptr);

// Builds serialized Examples the way TensorFlow writes them: numeric lists packed, features in
// the order added (protobuf maps have no order).
class ExampleBuilder {
 public:
  ExampleBuilder& AddInt64(std::string name, std::span<const int64_t> values);
  ExampleBuilder& AddFloat(std::string name, std::span<const float> values);
  ExampleBuilder& AddBytes(std::string name, std::vector<std::string> values);
  ExampleBuilder& AddInt64(std::string name, std::initializer_list<int64_t> values) {
    return AddInt64(std::move(name), std::span<const int64_t>(values.begin(), values.size()));
  }
  ExampleBuilder& AddFloat(std::string name, std::initializer_list<float> values) {
    return AddFloat(std::move(name), std::span<const float>(values.begin(), values.size()));
  }
  std::string Serialize() const;
  void SerializeTo(std::string* out) const;  // appends
  void Clear() { features_.clear(); }

 private:
  struct Entry {
    std::string name;
    FeatureKind kind;
    std::vector<int64_t> ints;
    std::vector<float> floats;
    std::vector<std::string> bytes;
  };
  std::vector<Entry> features_;
};

// ---------------------------------------------------------------------------------------------
// Wire-format primitives, shared by the parser and its decoders.
namespace wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

// Reads a varint of at most 10 bytes; false if it runs past `end` or is longer.
inline bool ReadVarint(const char*& p, const char* end, uint64_t* value) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70 && p < end; shift += 7) {
    const uint8_t byte = static_cast<uint8_t>(*p++);
    result |= static_cast<uint64_t>(byte & 0x7f) << (shift < 64 ? shift : 63);
    if ((byte & 0x80) == 0) {
      *value = result;
      return true;
    }
  }
  return false;
}

// Skips one field whose tag was just read. REQUIRES: ParseExample validated these bytes.
const char* SkipValidatedField(const char* p, const char* end, uint64_t tag);

}  // namespace wire

template <typename Fn>
void FeatureView::ForEachBytes(Fn&& fn) const {
  const char* p = list.data();
  const char* end = p + list.size();
  while (p < end) {
    uint64_t tag = 0, len = 0;
    wire::ReadVarint(p, end, &tag);
    const uint32_t wt = static_cast<uint32_t>(tag & 7);
    if (tag >> 3 == 1 && wt == wire::kLengthDelimited) {
      wire::ReadVarint(p, end, &len);
      fn(std::string_view(p, static_cast<size_t>(len)));
      p += len;
    } else {
      p = wire::SkipValidatedField(p, end, tag);  // an unknown field, validated by the parser
    }
  }
}

}  // namespace shardflow::io
