#include "io/text/bag_of_words.hpp"

#include <algorithm>
#include <cmath>

namespace shardflow::text {

BagOfWordsAccuracy NaiveBayesBaseline(const std::vector<std::vector<int64_t>>& train,
                                      const std::vector<int64_t>& train_labels,
                                      const std::vector<std::vector<int64_t>>& heldout,
                                      const std::vector<int64_t>& heldout_labels,
                                      int64_t vocabulary, int64_t classes) {
  const auto v = static_cast<size_t>(vocabulary), c = static_cast<size_t>(classes);
  std::vector<double> docs(c, 0), words(c * v, 1.0), totals(c, static_cast<double>(vocabulary));
  for (size_t d = 0; d < train.size(); ++d) {
    const auto k = static_cast<size_t>(train_labels[d]);
    docs[k] += 1;
    for (int64_t t : train[d]) {
      words[k * v + static_cast<size_t>(t)] += 1;
      totals[k] += 1;
    }
  }
  BagOfWordsAccuracy out;
  const auto majority =
      static_cast<int64_t>(std::max_element(docs.begin(), docs.end()) - docs.begin());
  int64_t right = 0, right_majority = 0;
  std::vector<double> score(c);
  for (size_t d = 0; d < heldout.size(); ++d) {
    for (size_t k = 0; k < c; ++k) {
      score[k] = std::log((docs[k] + 1) / (static_cast<double>(train.size()) + c));
      for (int64_t t : heldout[d]) {
        score[k] += std::log(words[k * v + static_cast<size_t>(t)] / totals[k]);
      }
    }
    const auto best =
        static_cast<int64_t>(std::max_element(score.begin(), score.end()) - score.begin());
    right += best == heldout_labels[d] ? 1 : 0;
    right_majority += majority == heldout_labels[d] ? 1 : 0;
  }
  if (!heldout.empty()) {
    out.naive_bayes = static_cast<double>(right) / static_cast<double>(heldout.size());
    out.majority = static_cast<double>(right_majority) / static_cast<double>(heldout.size());
  }
  return out;
}

}  // namespace shardflow::text
