// The bag-of-words baseline a text classifier is judged against: multinomial naive Bayes over
// token ids with add-one smoothing (Manning et al., "Introduction to Information Retrieval",
// 13.2), fitted on training documents' tokens and labels, and its accuracy on held-out ones;
// beside it the majority class's accuracy.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace shardflow::text {

struct BagOfWordsAccuracy {
  double naive_bayes = 0;
  double majority = 0;
};

// REQUIRES: every token in [0, vocabulary), every label in [0, classes).
BagOfWordsAccuracy NaiveBayesBaseline(const std::vector<std::vector<int64_t>>& train,
                                      const std::vector<int64_t>& train_labels,
                                      const std::vector<std::vector<int64_t>>& heldout,
                                      const std::vector<int64_t>& heldout_labels,
                                      int64_t vocabulary, int64_t classes);

}  // namespace shardflow::text
