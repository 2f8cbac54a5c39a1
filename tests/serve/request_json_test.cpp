// Parsing predict requests: row and columnar formats, nested and flat lists, {"b64"} images and
// raw bytes, and every bad-request class naming the instance index and the field; the JSON
// answers (floats that parse back to the same float32 bits, escaping).
#include "apps/serve/request_json.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "apps/serve/response_json.hpp"
#include "io/pipeline/ops/image_codec.hpp"

namespace shardflow::serve {
namespace request_json_test {

Signature ImageSignature() {  // uint8 [2, 2, 1]
  Signature sig;
  sig.input_name = "image_raw";
  sig.dtype = DType::kUInt8;
  sig.shape = {2, 2, 1};
  sig.output_width = 3;
  return sig;
}

std::string Base64(const std::string& bytes) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) |
                       (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out.push_back(kAlphabet[(v >> s) & 63]);
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

std::vector<int> Values(const Tensor& t) {
  return std::vector<int>(t.data<uint8_t>(), t.data<uint8_t>() + t.num_elements());
}

std::string ErrorOf(const std::string& body, const Signature& sig) {
  try {
    ParsePredictRequest(body, sig);
  } catch (const RequestError& e) {
    return e.what();
  }
  return "(accepted)";
}

Signature TextSignature(bool fail_too_long) {  // byte tokens, 4 a row
  Signature sig;
  sig.input_name = "text";
  sig.dtype = DType::kFloat32;
  sig.shape = {4};
  sig.output_width = 3;
  sig.tokenizer = std::make_shared<const text::Tokenizer>(text::Tokenizer::Make({.kind = "byte"}));
  sig.max_tokens = 4;
  sig.fail_too_long = fail_too_long;
  return sig;
}

TEST(RequestJson, TextInstancesAreTokenizedPaddedAndCut) {
  const Signature sig = TextSignature(false);
  const ParsedRequest r = ParsePredictRequest(
      R"({"instances": ["hi", {"b64": ")" + Base64("abcdef") + R"("}, {"text": ""}]})", sig);
  ASSERT_EQ(r.rows.shape(), (Shape{3, 4}));
  const float* v = r.rows.data<float>();
  EXPECT_EQ(std::vector<float>(v, v + 12),
            (std::vector<float>{104, 105, 257, 257, 97, 98, 99, 100, 257, 257, 257, 257}));
  const ParsedRequest columnar = ParsePredictRequest(R"({"inputs": {"text": ["ok"]}})", sig);
  EXPECT_TRUE(columnar.columnar);
  EXPECT_EQ(columnar.rows.data<float>()[1], 'k');
  EXPECT_EQ(ErrorOf(R"({"instances": ["ok", 7]})", sig),
            "instances[1]: field \"text\": expected a string (the text), found a number");
  EXPECT_EQ(ErrorOf(R"({"instances": ["ok", "too long"]})", TextSignature(true)),
            "instances[1]: field \"text\": text of 8 tokens, more than max_tokens = 4 "
            "(data.too_long = fail)");
  EXPECT_EQ(ErrorOf(R"({"instances": [{"tokens": "x"}]})", sig),
            "instances[0]: unknown field \"tokens\" (the model's input is \"text\")");
  const std::string meta = MetadataResponse(sig, "m", 1);
  EXPECT_NE(
      meta.find(R"("text":{"dtype":"DT_STRING","tensor_shape":{"dim":[{"size":"-1","name":""}],)"),
      std::string::npos)
      << meta;
}

TEST(RequestJson, RowFormatNestedFlatAndNamed) {
  const Signature sig = ImageSignature();
  const ParsedRequest r = ParsePredictRequest(
      R"({"instances": [[[[1],[2]],[[3],[4]]], [5,6,7,8], {"image_raw": [9,10,11,12]}]})", sig);
  EXPECT_FALSE(r.columnar);
  EXPECT_EQ(r.rows.shape(), (Shape{3, 2, 2, 1}));
  EXPECT_EQ(Values(r.rows), (std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
}

TEST(RequestJson, ColumnarListOrByName) {
  const Signature sig = ImageSignature();
  ParsedRequest r = ParsePredictRequest(R"({"inputs": [[1,2,3,4]]})", sig);
  EXPECT_TRUE(r.columnar);
  EXPECT_EQ(Values(r.rows), (std::vector<int>{1, 2, 3, 4}));
  r = ParsePredictRequest(
      R"({"signature_name": "serving_default", "inputs": {"image_raw": [[4,3,2,1]]}})", sig);
  EXPECT_EQ(Values(r.rows), (std::vector<int>{4, 3, 2, 1}));
}

TEST(RequestJson, Base64PngAndRawBytes) {
  const Signature sig = ImageSignature();
  Tensor img(DType::kUInt8, {2, 2, 1});
  for (int i = 0; i < 4; ++i) img.data<uint8_t>()[i] = static_cast<uint8_t>(10 * (i + 1));
  const std::string png = pipeline::EncodePng(img);
  const ParsedRequest r =
      ParsePredictRequest(R"({"instances": [{"b64": ")" + Base64(png) + R"("}, {"b64": ")" +
                              Base64(std::string("\x01\x02\x03\x04", 4)) + R"("}]})",
                          sig);
  EXPECT_EQ(Values(r.rows), (std::vector<int>{10, 20, 30, 40, 1, 2, 3, 4}));
}

TEST(RequestJson, FloatInputsTakeAnyNumber) {
  Signature sig = ImageSignature();
  sig.dtype = DType::kFloat32;
  sig.shape = {2};
  const ParsedRequest r = ParsePredictRequest(R"({"instances": [[0.5, -3e2]]})", sig);
  EXPECT_EQ(r.rows.data<float>()[0], 0.5f);
  EXPECT_EQ(r.rows.data<float>()[1], -300.0f);
}

TEST(RequestJson, EveryBadRequestNamesTheInstanceAndField) {
  const Signature sig = ImageSignature();
  const struct {
    std::string body;
    std::string error;
  } cases[] = {
      {R"({"instances": [[1,2,3,4], [1,2,3]]})",
       R"(instances[1]: field "image_raw": expected 2 values at top, found 3)"},
      {R"({"instances": [[[[1],[2]],[[3],[4,5]]]]})",
       R"(instances[0]: field "image_raw": expected 1 values at [1][1], found 2)"},
      {R"({"instances": [[1,2,3,256]]})",
       R"(instances[0]: field "image_raw": expected uint8 (an integer in [0, 255]) at [3], found 256)"},
      {R"({"instances": [[1,2,3,0.5]]})", R"(instances[0]: field "image_raw": expected uint8)"},
      {R"({"instances": [[1,2,3,"a"]]})",
       R"(instances[0]: field "image_raw": expected a number at [3], found a string)"},
      {R"({"instances": [[1,2,3,4], {"pixels": [1,2,3,4]}]})",
       R"(instances[1]: unknown field "pixels")"},
      {R"({"instances": [{}]})", R"(instances[0]: missing field "image_raw")"},
      {R"({"inputs": {"x": [[1,2,3,4]]}})", R"(inputs: unknown field "x")"},
      {R"({"instances": [{"b64": "AQID"}]})",
       R"(instances[0]: field "image_raw": raw bytes: expected 4 bytes (uint8 [2,2,1]), found 3)"},
      {R"({"instances": [{"b64": "A*=="}]})",
       R"(instances[0]: field "image_raw": b64: not base64)"},
      {R"({"instances": []})", R"(field "instances": no instances)"},
      {R"({"instances": 3})", R"(field "instances": expected a list of instances)"},
      {R"({"predict": []})", R"(unknown field "predict")"},
      {R"({})", R"(missing field "instances")"},
      {R"({"instances": [[1,2,3,4]], "inputs": [[1,2,3,4]]})", "both"},
      {R"({"instances": [[1,2,3,4]})", "malformed JSON"},
      {R"([1,2])", "the request must be a JSON object"},
      {"", "malformed JSON"},
  };
  for (const auto& c : cases) {
    const std::string got = ErrorOf(c.body, sig);
    EXPECT_NE(got.find(c.error), std::string::npos) << c.body << "\n  gave: " << got;
  }
}

TEST(RequestJson, CorruptImageIsABadRequest) {
  const Signature sig = ImageSignature();
  std::string png = "\x89PNG\r\n\x1a\n garbage";
  const std::string got = ErrorOf(R"({"instances": [{"b64": ")" + Base64(png) + R"("}]})", sig);
  EXPECT_NE(got.find("instances[0]: field \"image_raw\": undecodable image"), std::string::npos)
      << got;
}

TEST(ResponseJson, FloatsRoundTripAndStringsAreEscaped) {
  Signature sig = ImageSignature();
  BatchResults r;
  r.classes = {2};
  r.values = {0.1f, 1.0f / 3.0f, 0.56666666f};
  const std::string body = PredictResponse(sig, r, 1, false);
  // The shortest text that reads back as the same float (std::to_chars).
  EXPECT_EQ(body, R"({"predictions":[{"classes":2,"probabilities":[0.1,0.33333334,0.56666666]}]})")
      << body;
  EXPECT_EQ(std::stof("0.1"), 0.1f);
  EXPECT_EQ(std::stof("0.33333334"), 1.0f / 3.0f);
  EXPECT_EQ(std::stof("0.56666666"), 0.56666666f);
  EXPECT_EQ(PredictResponse(sig, r, 1, true),
            R"({"outputs":{"classes":[2],"probabilities":[[0.1,0.33333334,0.56666666]]}})");
  // Extremes stay valid JSON numbers and read back exactly (normal floats: the engine may
  // run with denormals flushed to zero).
  r.values = {1.17549435e-38f, 3.4028235e38f, 0.0f};
  const std::string extremes = PredictResponse(sig, r, 1, false);
  EXPECT_EQ(extremes,
            R"({"predictions":[{"classes":2,"probabilities":[1.1754944e-38,3.4028235e+38,0]}]})");
  EXPECT_EQ(std::stof("1.1754944e-38"), 1.17549435e-38f);
  EXPECT_EQ(std::stof("3.4028235e+38"), 3.4028235e38f);
  EXPECT_EQ(ErrorResponse("a \"b\"\n"), R"({"error":"a \"b\"\u000a"})");
}

}  // namespace request_json_test
}  // namespace shardflow::serve
