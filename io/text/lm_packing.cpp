#include "io/text/lm_packing.hpp"

#include <cmath>

#include "core/error.hpp"

namespace shardflow::text {

PackedBlocks PackForLanguageModel(const std::vector<std::vector<int64_t>>& documents,
                                  int64_t end_token, int64_t block) {
  if (block <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "a language-model block needs a positive length, got " + std::to_string(block));
  }
  PackedBlocks p;
  p.block = block;
  for (const auto& doc : documents) {
    p.stream.insert(p.stream.end(), doc.begin(), doc.end());
    p.stream.push_back(end_token);
  }
  const auto n = static_cast<int64_t>(p.stream.size());
  p.count = n > 0 ? (n - 1) / block : 0;
  p.dropped_tokens = n > 0 ? n - 1 - p.count * block : 0;
  return p;
}

BaselineLosses NgramBaselines(const PackedBlocks& train, const PackedBlocks& heldout,
                              int64_t vocabulary) {
  const auto v = static_cast<size_t>(vocabulary);
  std::vector<double> uni(v, 1.0);  // add-one
  std::vector<double> bi(v * v, 1.0);
  std::vector<double> bi_rows(v, static_cast<double>(vocabulary));
  double uni_total = static_cast<double>(vocabulary);
  const int64_t train_end = train.count * train.block + 1;  // the tokens the blocks cover
  for (int64_t i = 0; i < train_end; ++i) {
    const auto t = static_cast<size_t>(train.stream[static_cast<size_t>(i)]);
    uni[t] += 1;
    uni_total += 1;
    if (i > 0) {
      const auto prev = static_cast<size_t>(train.stream[static_cast<size_t>(i - 1)]);
      bi[prev * v + t] += 1;
      bi_rows[prev] += 1;
    }
  }
  BaselineLosses out;
  double targets = 0;
  for (int64_t b = 0; b < heldout.count; ++b) {
    const auto in = heldout.Input(b);
    const auto target = heldout.Target(b);
    for (size_t i = 0; i < target.size(); ++i) {
      const auto t = static_cast<size_t>(target[i]), prev = static_cast<size_t>(in[i]);
      out.unigram -= std::log(uni[t] / uni_total);
      out.bigram -= std::log(bi[prev * v + t] / bi_rows[prev]);
      targets += 1;
    }
  }
  if (targets > 0) {
    out.unigram /= targets;
    out.bigram /= targets;
  }
  return out;
}

}  // namespace shardflow::text
