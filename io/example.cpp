// tf.train.Example parser and serializer (the wire format is described in example.hpp).
//
// The parser is a recursive descent over length-delimited messages with a cursor [p, end) per
// level. Each level checks every tag's wire type and every length against its own end, so a
// length can never make the cursor leave the enclosing message.
#include "io/example.hpp"

#include <algorithm>

namespace shardflow::io {

using wire::ReadVarint;

const char* FeatureKindName(FeatureKind kind) {
  switch (kind) {
    case FeatureKind::kNone:
      return "none";
    case FeatureKind::kBytes:
      return "bytes";
    case FeatureKind::kFloat:
      return "float";
    case FeatureKind::kInt64:
      return "int64";
  }
  return "?";
}

namespace {

constexpr int kMaxGroupDepth = 64;

class Parser {
 public:
  Parser(std::string_view data, const RecordLocation* where) : begin_(data.data()), where_(where) {}

  // Records the error at position p; returns false so callers can `return Fail(...)`.
  bool Fail(const char* p, const std::string& what) const {
    const uint64_t pos = static_cast<uint64_t>(p - begin_);
    ErrorContext ctx;
    ctx.offset = pos;
    if (where_ != nullptr) {
      ctx.file = std::string(where_->file);
      ctx.offset = where_->data_offset + pos;
      if (where_->record >= 0) ctx.record = where_->record;
    }
    error_ = Status(ErrorCode::kDataLoss,
                    "malformed tf.train.Example: " + what + " at byte " + std::to_string(pos) +
                        " of the Example",
                    std::move(ctx));
    return false;
  }

  // Reads a tag; checks the field number and wire type are possible.
  bool ReadTag(const char*& p, const char* end, uint32_t* field, uint32_t* wire_type) const {
    const char* at = p;
    uint64_t tag = 0;
    if (!ReadVarint(p, end, &tag)) return Fail(at, "truncated or overlong tag varint");
    *field = static_cast<uint32_t>(std::min<uint64_t>(tag >> 3, UINT32_MAX));
    *wire_type = static_cast<uint32_t>(tag & 7);
    if (*field == 0 || (tag >> 3) > 0x1fffffff) return Fail(at, "invalid field number");
    if (*wire_type > 5) return Fail(at, "invalid wire type " + std::to_string(*wire_type));
    return true;
  }

  // Reads a length prefix and returns the sub-message [*sub, *sub_end).
  bool ReadLength(const char*& p, const char* end, const char** sub_end) const {
    const char* at = p;
    uint64_t len = 0;
    if (!ReadVarint(p, end, &len)) return Fail(at, "truncated length varint");
    if (len > static_cast<uint64_t>(end - p)) {
      return Fail(at, "length " + std::to_string(len) + " runs past the end of its message (" +
                          std::to_string(end - p) + " bytes left)");
    }
    *sub_end = p + len;
    return true;
  }

  // Skips the value of a field with the given wire type (tag already read).
  bool Skip(const char*& p, const char* end, uint32_t field, uint32_t wire_type,
            int depth = 0) const {
    uint64_t v = 0;
    const char* at = p;
    switch (wire_type) {
      case wire::kVarint:
        if (!ReadVarint(p, end, &v)) return Fail(at, "truncated varint");
        return true;
      case wire::kFixed64:
        if (end - p < 8) return Fail(at, "truncated fixed64");
        p += 8;
        return true;
      case wire::kFixed32:
        if (end - p < 4) return Fail(at, "truncated fixed32");
        p += 4;
        return true;
      case wire::kLengthDelimited: {
        const char* sub_end = nullptr;
        if (!ReadLength(p, end, &sub_end)) return false;
        p = sub_end;
        return true;
      }
      case wire::kStartGroup: {
        if (depth >= kMaxGroupDepth) return Fail(at, "groups nested too deeply");
        while (true) {
          if (p >= end) return Fail(p, "unterminated group");
          uint32_t f = 0, wt = 0;
          if (!ReadTag(p, end, &f, &wt)) return false;
          if (wt == wire::kEndGroup) {
            if (f != field) return Fail(at, "mismatched end group");
            return true;
          }
          if (!Skip(p, end, f, wt, depth + 1)) return false;
        }
      }
      default:
        return Fail(at, "unexpected end group");
    }
  }

  bool WrongWireType(const char* at, const char* message, uint32_t field, uint32_t wt) const {
    return Fail(at, std::string(message) + " field " + std::to_string(field) + " has wire type " +
                        std::to_string(wt));
  }

  // Validates a BytesList/FloatList/Int64List body and counts its values.
  bool ParseList(FeatureView* f) const {
    const char* p = f->list.data();
    const char* end = p + f->list.size();
    int64_t count = 0;
    uint64_t total = 0;
    while (p < end) {
      const char* at = p;
      uint32_t field = 0, wt = 0;
      if (!ReadTag(p, end, &field, &wt)) return false;
      if (field != 1) {
        if (!Skip(p, end, field, wt)) return false;
        continue;
      }
      switch (f->kind) {
        case FeatureKind::kBytes: {
          if (wt != wire::kLengthDelimited) return WrongWireType(at, "BytesList", field, wt);
          const char* v_end = nullptr;
          if (!ReadLength(p, end, &v_end)) return false;
          total += static_cast<uint64_t>(v_end - p);
          ++count;
          p = v_end;
          break;
        }
        case FeatureKind::kFloat: {
          if (wt == wire::kFixed32) {
            if (end - p < 4) return Fail(at, "truncated float");
            p += 4;
            ++count;
          } else if (wt == wire::kLengthDelimited) {
            const char* v_end = nullptr;
            if (!ReadLength(p, end, &v_end)) return false;
            if ((v_end - p) % 4 != 0)
              return Fail(at, "packed float list length not a multiple of 4");
            count += (v_end - p) / 4;
            p = v_end;
          } else {
            return WrongWireType(at, "FloatList", field, wt);
          }
          break;
        }
        case FeatureKind::kInt64: {
          uint64_t v = 0;
          if (wt == wire::kVarint) {
            if (!ReadVarint(p, end, &v)) return Fail(at, "truncated int64 varint");
            ++count;
          } else if (wt == wire::kLengthDelimited) {
            const char* v_end = nullptr;
            if (!ReadLength(p, end, &v_end)) return false;
            while (p < v_end) {
              const char* vat = p;
              if (!ReadVarint(p, v_end, &v))
                return Fail(vat, "malformed varint in packed int64 list");
              ++count;
            }
          } else {
            return WrongWireType(at, "Int64List", field, wt);
          }
          break;
        }
        case FeatureKind::kNone:
          break;
      }
    }
    f->num_values = count;
    f->total_bytes = total;
    return true;
  }

  // Walks a message's fields, skipping all but fields 1..last, which must be length-delimited
  // (`what` names the message in the error), and calls body(field, tag, begin, end) on each of
  // their values (`tag` points at the field's tag, for error offsets).
  template <typename Body>
  bool ForEachLengthDelimited(const char* p, const char* end, uint32_t last, const char* what,
                              Body body) const {
    while (p < end) {
      const char* at = p;
      uint32_t field = 0, wt = 0;
      if (!ReadTag(p, end, &field, &wt)) return false;
      if (field < 1 || field > last) {
        if (!Skip(p, end, field, wt)) return false;
        continue;
      }
      if (wt != wire::kLengthDelimited) return WrongWireType(at, what, field, wt);
      const char* sub_end = nullptr;
      if (!ReadLength(p, end, &sub_end)) return false;
      if (!body(field, at, p, sub_end)) return false;
      p = sub_end;
    }
    return true;
  }

  // Feature { oneof kind { bytes_list = 1; float_list = 2; int64_list = 3; } }
  bool ParseFeature(const char* p, const char* end, FeatureView* f) const {
    const bool ok = ForEachLengthDelimited(
        p, end, 3, "Feature", [&](uint32_t field, const char* at, const char* b, const char* e) {
          const FeatureKind kind = field == 1   ? FeatureKind::kBytes
                                   : field == 2 ? FeatureKind::kFloat
                                                : FeatureKind::kInt64;
          if (f->kind == kind) {
            return Fail(at, "a " + std::string(FeatureKindName(kind)) +
                                " list given twice in one Feature (split encoding is not "
                                "supported)");
          }
          f->kind = kind;
          f->list = std::string_view(b, static_cast<size_t>(e - b));
          return true;
        });
    if (!ok) return false;
    if (f->kind != FeatureKind::kNone) return ParseList(f);
    return true;
  }

  // map entry { string key = 1; Feature value = 2; }
  bool ParseEntry(const char* p, const char* end, FeatureView* f) const {
    return ForEachLengthDelimited(p, end, 2, "feature map entry",
                                  [&](uint32_t field, const char*, const char* b, const char* e) {
                                    if (field == 1) {
                                      f->name = std::string_view(b, static_cast<size_t>(e - b));
                                      return true;
                                    }
                                    // A second value merges into the first: an empty Feature keeps
                                    // the kind set before.
                                    FeatureView merged = *f;
                                    if (!ParseFeature(b, e, &merged)) return false;
                                    *f = merged;
                                    return true;
                                  });
  }

  bool ParseFeatures(const char* p, const char* end, std::vector<FeatureView>* out) const {
    return ForEachLengthDelimited(
        p, end, 1, "Features", [&](uint32_t, const char*, const char* b, const char* e) {
          FeatureView f;
          if (!ParseEntry(b, e, &f)) return false;
          // A repeated key replaces the earlier entry (protobuf map semantics).
          auto same = std::find_if(out->begin(), out->end(),
                                   [&](const FeatureView& g) { return g.name == f.name; });
          if (same != out->end()) {
            *same = f;
          } else {
            out->push_back(f);
          }
          return true;
        });
  }

  bool ParseExampleBody(const char* p, const char* end, std::vector<FeatureView>* out) const {
    // Features given twice merge: their map entries accumulate.
    return ForEachLengthDelimited(p, end, 1, "Example",
                                  [&](uint32_t, const char*, const char* b, const char* e) {
                                    return ParseFeatures(b, e, out);
                                  });
  }

 private:
  const char* begin_;
  const RecordLocation* where_;

 public:
  // The error after a method returned false. Kept out of the return values so the hot path
  // never builds a Status.
  mutable Status error_;
};

}  // namespace

Status ParseExample(std::string_view serialized, ExampleView* out, const RecordLocation* where) {
  out->features_.clear();
  Parser parser(serialized, where);
  if (parser.ParseExampleBody(serialized.data(), serialized.data() + serialized.size(),
                              &out->features_)) {
    return Status::Ok();
  }
  return std::move(parser.error_);
}

const FeatureView* ExampleView::Find(std::string_view name) const {
  for (const FeatureView& f : features_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

namespace wire {
const char* SkipValidatedField(const char* p, const char* end, uint64_t tag) {
  uint64_t v = 0;
  switch (tag & 7) {
    case kVarint:
      ReadVarint(p, end, &v);
      return p;
    case kFixed64:
      return p + 8;
    case kFixed32:
      return p + 4;
    case kLengthDelimited:
      ReadVarint(p, end, &v);
      return p + v;
    case kStartGroup:
      while (p < end) {
        uint64_t inner = 0;
        ReadVarint(p, end, &inner);
        if ((inner & 7) == kEndGroup) return p;
        p = SkipValidatedField(p, end, inner);
      }
      return p;
    default:
      return end;
  }
}
}  // namespace wire

// The decoders walk the list body again; field 1 holds values, anything else was validated as a
// skippable unknown field.
void FeatureView::CopyFloats(float* out) const {
  const char* p = list.data();
  const char* end = p + list.size();
  while (p < end) {
    uint64_t tag = 0;
    ReadVarint(p, end, &tag);
    if (tag == ((1 << 3) | wire::kLengthDelimited)) {
      uint64_t len = 0;
      ReadVarint(p, end, &len);
      // An empty packed list may come with out == nullptr (an empty vector's data()): memcpy
      // must not see a null pointer even for 0 bytes.
      if (len > 0) std::memcpy(out, p, static_cast<size_t>(len));  // little-endian IEEE floats
      out += len / 4;
      p += len;
    } else if (tag == ((1 << 3) | wire::kFixed32)) {
      std::memcpy(out++, p, 4);
      p += 4;
    } else {
      p = wire::SkipValidatedField(p, end, tag);
    }
  }
}

void FeatureView::CopyInt64s(int64_t* out) const {
  const char* p = list.data();
  const char* end = p + list.size();
  while (p < end) {
    uint64_t tag = 0, v = 0;
    ReadVarint(p, end, &tag);
    if (tag == ((1 << 3) | wire::kLengthDelimited)) {
      uint64_t len = 0;
      ReadVarint(p, end, &len);
      const char* v_end = p + len;
      // Packed varints: most values are one byte (labels, small ids); take the short path.
      while (p < v_end) {
        const uint8_t b = static_cast<uint8_t>(*p);
        if (b < 0x80) {
          *out++ = b;
          ++p;
        } else {
          ReadVarint(p, v_end, &v);
          *out++ = static_cast<int64_t>(v);
        }
      }
    } else if (tag == ((1 << 3) | wire::kVarint)) {
      ReadVarint(p, end, &v);
      *out++ = static_cast<int64_t>(v);
    } else {
      p = wire::SkipValidatedField(p, end, tag);
    }
  }
}

void FeatureView::CopyBytes(uint8_t* out) const {
  ForEachBytes([&](std::string_view v) {
    if (v.empty()) return;  // out may be nullptr when every value is empty
    std::memcpy(out, v.data(), v.size());
    out += v.size();
  });
}

// ---------------------------------------------------------------------------------------------
// Serializer.

namespace {

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Length of a length-delimited field with a one-byte tag and `body` bytes.
size_t FieldSize(size_t body) { return 1 + VarintSize(body) + body; }

}  // namespace

ExampleBuilder& ExampleBuilder::AddInt64(std::string name, std::span<const int64_t> values) {
  features_.push_back(
      {std::move(name), FeatureKind::kInt64, {values.begin(), values.end()}, {}, {}});
  return *this;
}
ExampleBuilder& ExampleBuilder::AddFloat(std::string name, std::span<const float> values) {
  features_.push_back(
      {std::move(name), FeatureKind::kFloat, {}, {values.begin(), values.end()}, {}});
  return *this;
}
ExampleBuilder& ExampleBuilder::AddBytes(std::string name, std::vector<std::string> values) {
  features_.push_back({std::move(name), FeatureKind::kBytes, {}, {}, std::move(values)});
  return *this;
}

void ExampleBuilder::SerializeTo(std::string* out) const {
  // Sizes bottom-up: list body -> Feature body -> entry body -> Features body.
  std::vector<size_t> list_sizes, packed_sizes, feature_sizes, entry_sizes;
  size_t features_size = 0;
  for (const Entry& e : features_) {
    size_t list = 0, packed = 0;
    if (e.kind == FeatureKind::kInt64) {
      for (int64_t v : e.ints) packed += VarintSize(static_cast<uint64_t>(v));
      list = e.ints.empty() ? 0 : FieldSize(packed);
    } else if (e.kind == FeatureKind::kFloat) {
      packed = 4 * e.floats.size();
      list = e.floats.empty() ? 0 : FieldSize(packed);
    } else {
      for (const std::string& b : e.bytes) list += FieldSize(b.size());
    }
    const size_t feature = FieldSize(list);
    const size_t entry = FieldSize(e.name.size()) + FieldSize(feature);
    list_sizes.push_back(list);
    packed_sizes.push_back(packed);
    feature_sizes.push_back(feature);
    entry_sizes.push_back(entry);
    features_size += FieldSize(entry);
  }
  out->reserve(out->size() + FieldSize(features_size));
  out->push_back(0x0a);  // Example.features
  PutVarint(out, features_size);
  for (size_t i = 0; i < features_.size(); ++i) {
    const Entry& e = features_[i];
    out->push_back(0x0a);  // Features.feature (map entry)
    PutVarint(out, entry_sizes[i]);
    out->push_back(0x0a);  // key
    PutVarint(out, e.name.size());
    out->append(e.name);
    out->push_back(0x12);  // value
    PutVarint(out, feature_sizes[i]);
    const char list_tag = e.kind == FeatureKind::kBytes   ? 0x0a
                          : e.kind == FeatureKind::kFloat ? 0x12
                                                          : 0x1a;
    out->push_back(list_tag);
    PutVarint(out, list_sizes[i]);
    if (e.kind == FeatureKind::kInt64 && !e.ints.empty()) {
      out->push_back(0x0a);
      PutVarint(out, packed_sizes[i]);
      for (int64_t v : e.ints) PutVarint(out, static_cast<uint64_t>(v));
    } else if (e.kind == FeatureKind::kFloat && !e.floats.empty()) {
      out->push_back(0x0a);
      PutVarint(out, packed_sizes[i]);
      out->append(reinterpret_cast<const char*>(e.floats.data()), 4 * e.floats.size());
    } else if (e.kind == FeatureKind::kBytes) {
      for (const std::string& b : e.bytes) {
        out->push_back(0x0a);
        PutVarint(out, b.size());
        out->append(b);
      }
    }
  }
}

std::string ExampleBuilder::Serialize() const {
  std::string out;
  SerializeTo(&out);
  return out;
}

}  // namespace shardflow::io
