// Text in the input pipeline: the [data] keys that tokenize a document feature and batch
// sequences of different lengths (tf.data + tensorflow_text's way, not a convert step).
//
//   tokenizer = byte | bpe | wordpiece | lookup   (none: no text; io/text/tokenizer.hpp)
//   text_feature = text            the document's bytes: a JSON-lines string field
//                                  (json_schema "text:bytes"), a TFRecord bytes feature of any
//                                  length (features "text:bytes:uint8:*"), or format text's
//                                  "line" (the default there)
//   bpe_vocab, bpe_merges, wordpiece_vocab, lookup_vocab, oov_buckets, lowercase
//   max_tokens = 128               REQUIRED with a tokenizer (but not with pack): the model's
//                                  context
//   too_long = truncate | fail     a longer document: cut (counted) or a one-line error
//   pad_to = max | batch | bucket  max: every batch padded to max_tokens (what a model of a fixed
//                                  context reads); batch: to the longest in the batch
//                                  (tf.data padded_batch); bucket: to its bucket's boundary - 1
//                                  (pad_to_bucket_boundary)
//   bucket_boundaries = 32, 64     lengths; empty: no buckets. bucket_batch_sizes: one per bucket
//                                  (boundaries + 1), each a per-rank batch (batch_size then
//                                  sets none; the run report still names it)
//   mask = false                   true: tokens_mask, uint8 [B, L], 1 on the tokens
//   pack = 0                       T > 0: a language model's blocks instead (GPT packing,
//                                  nodes.hpp pack_sequences): every document followed by the
//                                  tokenizer's end id, the stream cut into `input`/`target`
//                                  int64 [T] with next-token targets; no max_tokens, buckets
//                                  or padding then
// The element after tokenizing: `tokens` int64 [L] and `length` int64 [] (ops/tokenize.hpp);
// batched: tokens [B, L] padded with the tokenizer's pad id, length [B].
// Bucketing and packing make the batches a pass yields depend on the lengths: CountLocalBatches
// counts them by tokenizing this rank's records once (no shuffle: the count does not depend on
// the order), which also reports the cut documents and the words out of vocabulary, and fails
// early under too_long = fail.
// Thread-safety: as input_pipeline.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/ops/tokenize.hpp"

namespace shardflow::pipeline {

struct TextInputOptions {
  std::string tokenizer = "none";
  std::string text_feature = "text";
  std::string bpe_vocab, bpe_merges, wordpiece_vocab, lookup_vocab;
  int64_t oov_buckets = 1;
  bool lowercase = true;
  int64_t max_tokens = 0;
  std::string too_long = "truncate";
  std::string pad_to = "max";
  std::vector<int64_t> bucket_boundaries, bucket_batch_sizes;
  bool mask = false;
  int64_t pack = 0;

  bool enabled() const { return tokenizer != "none"; }
  bool bucketed() const { return !bucket_boundaries.empty(); }
  bool packed() const { return enabled() && pack > 0; }
  // Whether the batches a pass yields depend on the documents' lengths (counted by tokenizing).
  bool counted_by_tokens() const { return enabled() && (bucketed() || pack > 0); }
};

// The tokens and length features a tokenized input holds.
inline constexpr const char* kTokensFeature = "tokens";
inline constexpr const char* kLengthFeature = "length";
// The features of a packed input's blocks.
inline constexpr const char* kPackedInputFeature = "input";
inline constexpr const char* kPackedTargetFeature = "target";

void RegisterTextOptions(ConfigSchema& schema, const std::string& section, TextInputOptions* o);
// The combination checks (max_tokens set, bucket sizes matching, pad_to bucket with buckets);
// Error(kInvalidArgument) naming SECTION.key. `format` "text" changes the default text_feature
// to "line".
void CheckTextOptions(const TextInputOptions& o, const std::string& format,
                      const std::string& section);
// The document feature: text_feature, or "line" for format text when left at its default.
std::string DocumentFeature(const TextInputOptions& o, const std::string& format);

// The tokenizer the options name: its files read once per process (a file changed on disk
// during a run is not read again).
std::shared_ptr<const text::Tokenizer> MakeInputTokenizer(const TextInputOptions& o,
                                                          const std::string& section);
// The tokenize step (ops/tokenize.hpp): padded to max_tokens when pad_to = max, nothing is
// bucketed and no mask is asked for (the batch then stacks), unpadded otherwise.
MapFn MakeTextStep(const TextInputOptions& o, const std::string& format, const std::string& section,
                   std::shared_ptr<const text::Tokenizer> tokenizer,
                   std::shared_ptr<TokenizeCounts> counts = nullptr);
// How batches are made when the step leaves sequences unpadded: padded_batch options (pad id,
// the pad_to = max shape, masks), and the buckets when bucketed.
PaddedBatchOptions TextPadding(const TextInputOptions& o, const text::Tokenizer& tokenizer);
BucketOptions TextBuckets(const TextInputOptions& o, const text::Tokenizer& tokenizer,
                          bool drop_remainder);
PackOptions TextPacking(const TextInputOptions& o, const text::Tokenizer& tokenizer);

}  // namespace shardflow::pipeline
