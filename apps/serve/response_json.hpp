// The JSON bodies shardflow-serve answers with, in TensorFlow Serving's REST shapes:
//   predict, row format:  {"predictions": [{"classes": 3, "probabilities": [...]}, ...]}
//                         (reconstruct: {"error": e} per instance)
//   predict, columnar:    {"outputs": {"classes": [...], "probabilities": [[...], ...]}}
//   status:               {"model_version_status": [{"version": "8", "state": "AVAILABLE",
//                          "status": {"error_code": "OK", "error_message": ""}}]}
//   metadata:             {"model_spec": {...}, "metadata": {"signature_def": {"signature_def":
//                          {"serving_default": {"inputs": ..., "outputs": ..., "method_name":
//                          "tensorflow/serving/predict"}}}}}
//   errors:               {"error": "..."}
// Floats are written with 9 significant digits: parsed back as float32 they are the same bits.
// Thread-safety: reentrant.
#pragma once

#include <string>

#include "apps/serve/signature.hpp"

namespace shardflow::serve {

std::string PredictResponse(const Signature& sig, const BatchResults& results, int64_t rows,
                            bool columnar);
std::string StatusResponse(int64_t version);
std::string MetadataResponse(const Signature& sig, const std::string& model_name, int64_t version);
std::string ErrorResponse(const std::string& message);
// `text` as a JSON string literal, quotes included.
std::string JsonString(const std::string& text);

}  // namespace shardflow::serve
