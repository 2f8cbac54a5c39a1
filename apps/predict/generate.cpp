#include "apps/predict/generate.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.hpp"
#include "core/random.hpp"
#include "io/text/byte_tokenizer.hpp"

namespace shardflow::predict {
namespace {

using text::ByteTokenizer;

void CheckModel(const Sequential<float>& model, const GenerateOptions& o) {
  const Shape& in = model.input_shape();
  const Shape& out = model.output_shape();
  if (in.size() != 1 || out.size() != 2 || out[0] != in[0] || out[1] < ByteTokenizer::kVocabulary) {
    throw Error(ErrorCode::kInvalidArgument,
                "--generate needs a byte-level language model: input (T) token ids and output "
                "(T, V >= " +
                    std::to_string(ByteTokenizer::kVocabulary) + ") logits, got input " +
                    ShapeToString(in) + " and output " + ShapeToString(out),
                {.key = "--generate"});
  }
  if (o.prompt.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--generate needs a prompt of at least one byte",
                {.key = "--generate"});
  }
  if (!(o.temperature >= 0) || o.top_k < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "predict.temperature must be >= 0 and predict.top_k >= 0",
                {.key = "predict.temperature"});
  }
}

// The next id from the logits of one position (the byte tokenizer's ids only).
int64_t Draw(const float* logits, const GenerateOptions& o, uint64_t index) {
  const int64_t v = ByteTokenizer::kVocabulary - 1;  // the pad token is never drawn
  std::vector<int64_t> ids(static_cast<size_t>(v));
  std::iota(ids.begin(), ids.end(), int64_t{0});
  std::stable_sort(ids.begin(), ids.end(),
                   [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
  if (o.temperature == 0) return ids[0];
  const size_t keep =
      o.top_k > 0 ? std::min<size_t>(static_cast<size_t>(o.top_k), ids.size()) : ids.size();
  std::vector<double> p(keep);
  const double top = logits[ids[0]];
  double sum = 0;
  for (size_t i = 0; i < keep; ++i) {
    p[i] = std::exp((static_cast<double>(logits[ids[i]]) - top) / o.temperature);
    sum += p[i];
  }
  double u = RandomUniform(o.seed, 0, index) * sum;
  for (size_t i = 0; i < keep; ++i) {
    if (u < p[i]) return ids[i];
    u -= p[i];
  }
  return ids[keep - 1];
}

}  // namespace

std::string Generate(Sequential<float>& model, const GenerateOptions& o) {
  CheckModel(model, o);
  const int64_t t = model.input_shape()[0], vocab = model.output_shape()[1];
  std::vector<int64_t> ids;
  ByteTokenizer::Encode(o.prompt, &ids);
  const size_t prompt = ids.size();
  Tensor x(DType::kFloat32, {1, t});
  for (int64_t n = 0; n < o.tokens; ++n) {
    const size_t start = ids.size() > static_cast<size_t>(t) ? ids.size() - t : 0;
    const auto used = static_cast<int64_t>(ids.size() - start);
    float* xp = x.data<float>();
    for (int64_t i = 0; i < t; ++i) {
      xp[i] = static_cast<float>(i < used ? ids[start + i] : ByteTokenizer::kPad);
    }
    const Tensor y = model.Forward(x, false);
    ids.push_back(Draw(y.data<float>() + (used - 1) * vocab, o, static_cast<uint64_t>(n)));
  }
  return o.prompt +
         ByteTokenizer::Decode(std::span<const int64_t>(ids).subspan(prompt), o.end_text);
}

}  // namespace shardflow::predict
