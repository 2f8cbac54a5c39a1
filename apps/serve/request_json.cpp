#include "apps/serve/request_json.hpp"

#include <simdjson.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "io/pipeline/ops/image_codec.hpp"

namespace shardflow::serve {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

const char* TypeName(element_type t) {
  switch (t) {
    case element_type::ARRAY:
      return "a list";
    case element_type::OBJECT:
      return "an object";
    case element_type::STRING:
      return "a string";
    case element_type::BOOL:
      return "a bool";
    case element_type::NULL_VALUE:
      return "null";
    default:
      return "a number";
  }
}

// "[i]" (built by appends: GCC 12's -Wrestrict misfires on "[" + std::to_string(i)).
std::string Index(int64_t i) {
  std::string out(1, '[');
  out += std::to_string(i);
  out.push_back(']');
  return out;
}

std::string NumberText(double d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", d);
  return buf;
}

bool IsNumber(element_type t) {
  return t == element_type::INT64 || t == element_type::UINT64 || t == element_type::DOUBLE;
}

// Reads one instance into `dst` (sig.row_bytes() bytes). `where` names it ("instances[3]").
class InstanceReader {
 public:
  InstanceReader(const Signature& sig, std::string where, uint8_t* dst)
      : sig_(sig), where_(std::move(where)), dst_(dst) {}

  void Read(element v) {
    if (sig_.tokenizer) {
      ReadText(v);
      return;
    }
    if (v.type() == element_type::OBJECT) {
      ReadBytes(v);
      return;
    }
    const Shape& shape = sig_.shape;
    const int64_t count = sig_.row_elements();
    if (IsNumber(v.type())) {
      if (count != 1) Fail("expected " + ShapeToString(shape) + " values, found one number");
      Put(v);
      return;
    }
    if (v.type() != element_type::ARRAY) {
      Fail(std::string("expected a list, found ") + TypeName(v.type()));
    }
    simdjson::dom::array a = v.get_array().value_unsafe();
    // A flat list of the element count is taken for any shape (when its first dimension
    // differs from that count, or its first element is a number).
    if (shape.size() > 1 && static_cast<int64_t>(a.size()) == count &&
        (shape[0] != count || IsNumber(a.at(0).value_unsafe().type()))) {
      path_.assign(1, 0);
      for (element e : a) {
        Put(e);
        ++path_[0];
      }
      return;
    }
    Fill(v, 0);
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw RequestError(where_ + ": field \"" + sig_.input_name + "\": " + what);
  }

  // Where in the instance's nested lists the reader is, "[3][7]" ("" at the top): spelled out
  // only for an error (building it for every value cost more than reading the value).
  std::string At() const {
    std::string out;
    for (const int64_t i : path_) out += Index(i);
    return out;
  }

  void Fill(element v, size_t dim) {
    if (dim == sig_.shape.size()) {
      Put(v);
      return;
    }
    const int64_t want = sig_.shape[dim];
    if (v.type() != element_type::ARRAY) {
      Fail("expected a list of " + std::to_string(want) + " at " + (path_.empty() ? "top" : At()) +
           ", found " + TypeName(v.type()) + " (input shape " + ShapeToString(sig_.shape) + ")");
    }
    simdjson::dom::array a = v.get_array().value_unsafe();
    if (static_cast<int64_t>(a.size()) != want) {
      Fail("expected " + std::to_string(want) + " values at " + (path_.empty() ? "top" : At()) +
           ", found " + std::to_string(a.size()) + " (input shape " + ShapeToString(sig_.shape) +
           ")");
    }
    path_.push_back(0);
    for (element e : a) {
      Fill(e, dim + 1);
      ++path_.back();
    }
    path_.pop_back();
  }

  void Put(element v) {
    if (!IsNumber(v.type())) {
      Fail(std::string("expected a number") + (path_.empty() ? "" : " at " + At()) + ", found " +
           TypeName(v.type()));
    }
    const double d = v.get_double().value_unsafe();
    if (sig_.dtype == DType::kUInt8) {
      if (!(d >= 0 && d <= 255) || d != std::floor(d)) {
        Fail("expected uint8 (an integer in [0, 255])" + (path_.empty() ? "" : " at " + At()) +
             ", found " + NumberText(d));
      }
      dst_[pos_++] = static_cast<uint8_t>(d);
    } else {
      const float f = static_cast<float>(d);
      std::memcpy(dst_ + pos_, &f, sizeof f);
      pos_ += sizeof f;
    }
  }

  // {"b64": "..."}'s bytes.
  std::string B64Bytes(element v) const {
    simdjson::dom::object o = v.get_object().value_unsafe();
    std::string_view text;
    if (o.size() != 1 || o["b64"].get_string().get(text) != simdjson::SUCCESS) {
      Fail("expected {\"b64\": \"...\"} for bytes");
    }
    try {
      return DecodeBase64(text);
    } catch (const RequestError& e) {
      Fail(e.what());
    }
  }

  // A text input: a string (or b64 bytes) tokenized into max_tokens float ids, padded.
  void ReadText(element v) {
    std::string bytes;
    if (v.type() == element_type::OBJECT) {
      bytes = B64Bytes(v);
    } else if (v.type() == element_type::STRING) {
      bytes = std::string(v.get_string().value_unsafe());
    } else {
      Fail(std::string("expected a string (the text), found ") + TypeName(v.type()));
    }
    std::vector<int64_t> ids;
    sig_.tokenizer->Encode(bytes, &ids);
    const int64_t max = sig_.max_tokens;
    if (static_cast<int64_t>(ids.size()) > max && sig_.fail_too_long) {
      Fail("text of " + std::to_string(ids.size()) +
           " tokens, more than max_tokens = " + std::to_string(max) + " (data.too_long = fail)");
    }
    float* row = reinterpret_cast<float*>(dst_);
    for (int64_t i = 0; i < max; ++i) {
      const int64_t id = i < static_cast<int64_t>(ids.size()) ? ids[static_cast<size_t>(i)]
                                                              : sig_.tokenizer->pad_id();
      row[i] = static_cast<float>(id);
    }
  }

  void ReadBytes(element v) {
    const std::string bytes = B64Bytes(v);
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
    const bool jpeg = bytes.size() >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
    const bool png =
        bytes.size() >= 4 && data[0] == 0x89 && data[1] == 'P' && data[2] == 'N' && data[3] == 'G';
    if (!jpeg && !png) {
      if (bytes.size() != sig_.row_bytes()) {
        Fail("raw bytes: expected " + std::to_string(sig_.row_bytes()) + " bytes (" +
             DTypeName(sig_.dtype) + " " + ShapeToString(sig_.shape) + "), found " +
             std::to_string(bytes.size()));
      }
      std::memcpy(dst_, data, bytes.size());
      return;
    }
    if (sig_.dtype != DType::kUInt8) {
      Fail(std::string("an image decodes to uint8, the input is ") + DTypeName(sig_.dtype));
    }
    const Shape& shape = sig_.shape;
    const int channels =
        shape.size() == 3 && (shape[2] == 1 || shape[2] == 3) ? static_cast<int>(shape[2]) : 0;
    Tensor image;
    try {
      image = pipeline::DecodeImageBytes(data, bytes.size(), channels);
    } catch (const Error& e) {
      Fail(std::string("undecodable image: ") + e.what());
    }
    const bool fits =
        shape.size() == 3 ? image.shape() == shape : image.num_elements() == sig_.row_elements();
    if (!fits) {
      Fail("image is " + ShapeToString(image.shape()) + ", the input is " + ShapeToString(shape));
    }
    std::memcpy(dst_, image.raw_data(), sig_.row_bytes());
  }

  const Signature& sig_;
  std::string where_;
  uint8_t* dst_;
  size_t pos_ = 0;
  std::vector<int64_t> path_;  // indices into the nested lists (At())
};

// The instances of a request: `list` must be a non-empty list; `name` is "instances" or
// "inputs"; `row_format` allows {"NAME": instance} objects.
Tensor ReadInstances(element list, const std::string& name, bool row_format, const Signature& sig) {
  if (list.type() != element_type::ARRAY) {
    throw RequestError("field \"" + name + "\": expected a list of instances, found " +
                       TypeName(list.type()));
  }
  simdjson::dom::array a = list.get_array().value_unsafe();
  if (a.size() == 0) throw RequestError("field \"" + name + "\": no instances");
  Shape shape = sig.shape;
  shape.insert(shape.begin(), static_cast<int64_t>(a.size()));
  Tensor rows(sig.dtype, shape);
  auto* dst = static_cast<uint8_t*>(rows.raw_data());
  size_t i = 0;
  for (element e : a) {
    const std::string where = name + "[" + std::to_string(i) + "]";
    if (row_format && e.type() == element_type::OBJECT) {
      simdjson::dom::object o = e.get_object().value_unsafe();
      element inner;
      if (o["b64"].error() != simdjson::SUCCESS) {
        for (auto field : o) {
          if (field.key != sig.input_name) {
            throw RequestError(where + ": unknown field \"" + std::string(field.key) +
                               "\" (the model's input is \"" + sig.input_name + "\")");
          }
        }
        if (o[sig.input_name].get(inner) != simdjson::SUCCESS) {
          throw RequestError(where + ": missing field \"" + sig.input_name + "\"");
        }
        e = inner;
      }
    }
    InstanceReader(sig, where, dst + i * sig.row_bytes()).Read(e);
    ++i;
  }
  return rows;
}

}  // namespace

ParsedRequest ParsePredictRequest(const std::string& body, const Signature& sig) {
  thread_local simdjson::dom::parser parser;
  element doc;
  if (const auto err = parser.parse(body.data(), body.size()).get(doc); err) {
    throw RequestError(std::string("malformed JSON: ") + simdjson::error_message(err));
  }
  if (doc.type() != element_type::OBJECT) {
    throw RequestError(std::string("the request must be a JSON object, found ") +
                       TypeName(doc.type()));
  }
  simdjson::dom::object top = doc.get_object().value_unsafe();
  element instances;
  element inputs;
  bool has_instances = false;
  bool has_inputs = false;
  for (auto field : top) {
    if (field.key == "instances") {
      has_instances = true;
      instances = field.value;
    } else if (field.key == "inputs") {
      has_inputs = true;
      inputs = field.value;
    } else if (field.key == "signature_name") {
      std::string_view s;
      if (field.value.get_string().get(s) != simdjson::SUCCESS || s != "serving_default") {
        throw RequestError("field \"signature_name\": only \"serving_default\" is served");
      }
    } else {
      throw RequestError("unknown field \"" + std::string(field.key) +
                         "\" (expected \"instances\" or \"inputs\")");
    }
  }
  if (has_instances == has_inputs) {
    throw RequestError(has_inputs ? "both \"instances\" and \"inputs\" given: use one"
                                  : "missing field \"instances\" (or \"inputs\")");
  }
  ParsedRequest out;
  if (has_instances) {
    out.rows = ReadInstances(instances, "instances", /*row_format=*/true, sig);
    return out;
  }
  out.columnar = true;
  if (inputs.type() == element_type::OBJECT && inputs["b64"].error() != simdjson::SUCCESS) {
    simdjson::dom::object o = inputs.get_object().value_unsafe();
    for (auto field : o) {
      if (field.key != sig.input_name) {
        throw RequestError("inputs: unknown field \"" + std::string(field.key) +
                           "\" (the model's input is \"" + sig.input_name + "\")");
      }
    }
    element list;
    if (o[sig.input_name].get(list) != simdjson::SUCCESS) {
      throw RequestError("inputs: missing field \"" + sig.input_name + "\"");
    }
    out.rows = ReadInstances(list, "inputs." + sig.input_name, false, sig);
    return out;
  }
  out.rows = ReadInstances(inputs, "inputs", /*row_format=*/false, sig);
  return out;
}

std::string DecodeBase64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;  // '-' and '_': the URL-safe alphabet
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) throw RequestError("b64: truncated base64 text");
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const int v = value(text[i]);
    if (v < 0) {
      throw RequestError("b64: not base64 at character " + std::to_string(i));
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace shardflow::serve
