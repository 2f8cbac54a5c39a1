// Language-model packing (GPT's): documents joined into one token stream, each followed by the
// end-of-document token, then cut into blocks of `block` tokens with next-token targets:
//   stream = doc0 END doc1 END ...;   block b: input = stream[bT, bT + T), target = stream[bT + 1,
//   bT + T + 1)
// so every token but the stream's first is a target exactly once. The tail shorter than a block
// (fewer than T + 1 tokens left) is dropped and counted. A document longer than a block simply
// spans several; nothing is truncated.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace shardflow::text {

struct PackedBlocks {
  std::vector<int64_t> stream;  // the joined tokens
  int64_t block = 0;            // T
  int64_t count = 0;            // blocks
  int64_t dropped_tokens = 0;   // the tail no block covers as a target
  std::span<const int64_t> Input(int64_t b) const {
    return {stream.data() + b * block, static_cast<size_t>(block)};
  }
  std::span<const int64_t> Target(int64_t b) const {
    return {stream.data() + b * block + 1, static_cast<size_t>(block)};
  }
};

// Packs the documents' tokens (each followed by `end_token`) into blocks of `block` (> 0;
// Error(kInvalidArgument) otherwise).
PackedBlocks PackForLanguageModel(const std::vector<std::vector<int64_t>>& documents,
                                  int64_t end_token, int64_t block);

// Cross-entropy of n-gram baselines (nats per target token): fitted on `train`'s stream with
// add-one smoothing over `vocabulary` ids, evaluated on every target of `heldout`'s blocks.
struct BaselineLosses {
  double unigram = 0;
  double bigram = 0;
};
BaselineLosses NgramBaselines(const PackedBlocks& train, const PackedBlocks& heldout,
                              int64_t vocabulary);

}  // namespace shardflow::text
