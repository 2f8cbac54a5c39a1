#include "apps/serve/response_json.hpp"

#include <charconv>
#include <cstdio>

namespace shardflow::serve {
namespace {

// The shortest text that reads back as the same float (std::to_chars; printf's "%.9g" cost a
// few percent of a predict request's time in the server's profile).
void AppendFloat(std::string* out, float v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
}

void AppendFloats(std::string* out, const float* v, int64_t n) {
  out->push_back('[');
  for (int64_t j = 0; j < n; ++j) {
    if (j > 0) out->push_back(',');
    AppendFloat(out, v[j]);
  }
  out->push_back(']');
}

// A TensorFlow TensorInfo: dtype and shape, batch dimension -1.
std::string TensorInfo(const std::string& name, const char* dtype, const Shape& shape) {
  std::string s = "{\"dtype\":\"" + std::string(dtype) + "\",\"tensor_shape\":{\"dim\":[";
  s += "{\"size\":\"-1\",\"name\":\"\"}";
  for (const int64_t d : shape) s += ",{\"size\":\"" + std::to_string(d) + "\",\"name\":\"\"}";
  s += "],\"unknown_rank\":false},\"name\":" + JsonString(name) + "}";
  return s;
}

}  // namespace

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string PredictResponse(const Signature& sig, const BatchResults& r, int64_t rows,
                            bool columnar) {
  const bool classify = sig.task == apps::Task::kClassify;
  const int64_t k = sig.output_width;
  std::string out;
  out.reserve(static_cast<size_t>(rows * (classify ? k * 16 + 40 : 32)) + 32);
  if (columnar) {
    out += "{\"outputs\":{";
    if (classify) {
      out += "\"classes\":[";
      for (int64_t i = 0; i < rows; ++i) {
        if (i > 0) out.push_back(',');
        out += std::to_string(r.classes[static_cast<size_t>(i)]);
      }
      out += "],\"probabilities\":[";
      for (int64_t i = 0; i < rows; ++i) {
        if (i > 0) out.push_back(',');
        AppendFloats(&out, r.values.data() + i * k, k);
      }
    } else {
      out += "\"error\":";
      AppendFloats(&out, r.values.data(), rows);
      out += "}}";
      return out;
    }
    out += "]}}";
    return out;
  }
  out += "{\"predictions\":[";
  for (int64_t i = 0; i < rows; ++i) {
    if (i > 0) out.push_back(',');
    if (classify) {
      out += "{\"classes\":" + std::to_string(r.classes[static_cast<size_t>(i)]) +
             ",\"probabilities\":";
      AppendFloats(&out, r.values.data() + i * k, k);
    } else {
      out += "{\"error\":";
      AppendFloat(&out, r.values[static_cast<size_t>(i)]);
    }
    out.push_back('}');
  }
  out += "]}";
  return out;
}

std::string StatusResponse(int64_t version) {
  return "{\"model_version_status\":[{\"version\":\"" + std::to_string(version) +
         "\",\"state\":\"AVAILABLE\",\"status\":{\"error_code\":\"OK\",\"error_message\":\"\"}}]}";
}

std::string MetadataResponse(const Signature& sig, const std::string& model_name, int64_t version) {
  const char* dtype = sig.tokenizer                ? "DT_STRING"
                      : sig.dtype == DType::kUInt8 ? "DT_UINT8"
                                                   : "DT_FLOAT";
  std::string outputs;
  if (sig.task == apps::Task::kClassify) {
    outputs = "\"classes\":" + TensorInfo("classes", "DT_INT64", {}) +
              ",\"probabilities\":" + TensorInfo("probabilities", "DT_FLOAT", {sig.output_width});
  } else {
    outputs = "\"error\":" + TensorInfo("error", "DT_FLOAT", {});
  }
  return "{\"model_spec\":{\"name\":" + JsonString(model_name) +
         ",\"signature_name\":\"\",\"version\":\"" + std::to_string(version) +
         "\"},\"metadata\":{\"signature_def\":{\"signature_def\":{\"serving_default\":{"
         "\"inputs\":{" +
         JsonString(sig.input_name) + ":" +
         TensorInfo(sig.input_name, dtype, sig.tokenizer ? Shape{} : sig.shape) +
         "},\"outputs\":{" + outputs + "},\"method_name\":\"tensorflow/serving/predict\"}}}}}";
}

std::string ErrorResponse(const std::string& message) {
  return "{\"error\":" + JsonString(message) + "}";
}

}  // namespace shardflow::serve
