// shardflow-predict --generate PROMPT: text sampled from a byte-level language model (a model
// of input (T) token ids and output (T, V) logits, V >= 258, trained on
// shardflow-convert --input.format documents blocks; io/text/byte_tokenizer.hpp).
//
// The prompt's bytes fill the context from position 0, the rest is the pad token; the logits
// at the last prompt position give the next token, which joins the context; past T tokens the
// context is the last T (a sliding window, as GPT-2 samples). Each token is drawn
//   greedy (temperature 0): the most likely id (the first of equals);
//   otherwise: softmax(logits / temperature) over the top_k most likely ids (0: all of them),
//   with a counter-based uniform draw (seed, token index), so a seed gives the same text on any
//   machine and thread count.
// The end-of-document token prints as end_text ("\n%\n" in the fortune convention); ids the
// byte tokenizer does not know (>= 258) are never drawn. One forward pass per token.
// Errors: Error(kInvalidArgument) for a model of another shape, an empty prompt, a temperature
// below 0 or a negative top_k.
// Thread-safety: the model is used by one thread.
#pragma once

#include <cstdint>
#include <string>

#include "core/model.hpp"

namespace shardflow::predict {

struct GenerateOptions {
  std::string prompt;
  int64_t tokens = 200;      // ids to draw after the prompt
  double temperature = 1.0;  // 0: greedy
  int64_t top_k = 0;         // 0: every id
  uint64_t seed = 1;
  std::string end_text = "\n%\n";
};

// The prompt followed by the drawn text.
std::string Generate(Sequential<float>& model, const GenerateOptions& options);

}  // namespace shardflow::predict
