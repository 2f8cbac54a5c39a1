// Parsing a TensorFlow Serving REST predict request (simdjson) into the input feature's rows.
//
//   {"instances": [I0, I1, ...]}        row format: one instance per element
//   {"inputs": [I0, I1, ...]}           columnar format, one input: the same list
//   {"inputs": {"NAME": [I0, ...]}}     columnar, by input name
// optionally with "signature_name": "serving_default". An instance I is
//   a number (an input of one element), nested lists of the input's shape, or a flat list of
//   its element count; {"b64": "..."}: bytes, a JPEG or PNG image (decoded by the input
//   pipeline's codecs to uint8 [h, w, c], which must be the input's shape) or raw bytes (the
//   row in the input's dtype, little-endian); in row format also {"NAME": I} by input name.
// Numbers must fit the input's dtype: uint8 takes integers in [0, 255], float32 any number.
// Every failure throws RequestError (HTTP 400) with one line naming the instance index and the
// field, e.g. `instances[3]: field "image_raw": expected 28 values at [5], found 27`.
// Thread-safety: reentrant (a parser per thread).
#pragma once

#include <stdexcept>
#include <string>

#include "apps/serve/signature.hpp"
#include "core/tensor.hpp"

namespace shardflow::serve {

class RequestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ParsedRequest {
  bool columnar = false;  // answer {"outputs": ...} instead of {"predictions": [...]}
  Tensor rows;            // the input feature, [n, shape...] in the signature's dtype
};

ParsedRequest ParsePredictRequest(const std::string& body, const Signature& sig);

// Standard base64 (RFC 4648, '=' padding optional, no line breaks). Throws RequestError.
std::string DecodeBase64(std::string_view text);

}  // namespace shardflow::serve
