#include "io/pipeline/text_input.hpp"

#include <algorithm>
#include <map>

#include "core/thread_annotations.hpp"

namespace shardflow::pipeline {
namespace {

[[noreturn]] void Bad(const std::string& section, const std::string& key, const std::string& what,
                      const std::string& hint = "") {
  throw Error(ErrorCode::kInvalidArgument, what, {.key = section + "." + key, .hint = hint});
}

}  // namespace

void RegisterTextOptions(ConfigSchema& s, const std::string& sec, TextInputOptions* o) {
  std::vector<std::string> kinds = {"none"};
  for (const std::string& k : text::TokenizerKinds()) kinds.push_back(k);
  s.AddChoice(sec, "tokenizer", &o->tokenizer, kinds,
              "tokenize text_feature in the pipeline: byte, bpe (bpe_vocab + bpe_merges), "
              "wordpiece (wordpiece_vocab), lookup (words of lookup_vocab, unknown ones hashed "
              "into oov_buckets); none: no text");
  s.Add(sec, "text_feature", &o->text_feature,
        "tokenizer: the document's bytes feature (format text: its line)");
  s.Add(sec, "bpe_vocab", &o->bpe_vocab, "tokenizer bpe: vocab.json");
  s.Add(sec, "bpe_merges", &o->bpe_merges, "tokenizer bpe: merges.txt");
  s.Add(sec, "wordpiece_vocab", &o->wordpiece_vocab, "tokenizer wordpiece: BERT's vocab.txt");
  s.Add(sec, "lookup_vocab", &o->lookup_vocab, "tokenizer lookup: one word a line, id = line");
  s.Add(sec, "oov_buckets", &o->oov_buckets,
        "tokenizer lookup: ids for words not in lookup_vocab (hashed)")
      .Positive();
  s.Add(sec, "lowercase", &o->lowercase, "tokenizer wordpiece, lookup: lowercase ASCII first");
  s.Add(sec, "max_tokens", &o->max_tokens, "tokenizer: tokens per document (the model's context)")
      .NonNegative();
  s.AddChoice(sec, "too_long", &o->too_long, {"truncate", "fail"},
              "tokenizer: a document of more than max_tokens: cut (counted) or an error");
  s.AddChoice(sec, "pad_to", &o->pad_to, {"max", "batch", "bucket"},
              "tokenizer: pad batches to max_tokens, to the batch's longest, or to the bucket's "
              "boundary - 1");
  s.Add(sec, "bucket_boundaries", &o->bucket_boundaries,
        "tokenizer: batch documents of like lengths: bucket k holds lengths in [b(k-1), b(k))");
  s.Add(sec, "bucket_batch_sizes", &o->bucket_batch_sizes,
        "tokenizer: one per-rank batch size per bucket (one more than bucket_boundaries)");
  s.Add(sec, "mask", &o->mask, "tokenizer: batches also carry tokens_mask (1 on the tokens)");
  s.Add(sec, "pack", &o->pack,
        "tokenizer: T > 0 packs the documents (each ended by the end id) into a language "
        "model's blocks of T tokens, input and target (next tokens); 0: one record a document")
      .NonNegative();
}

std::string DocumentFeature(const TextInputOptions& o, const std::string& format) {
  return format == "text" && o.text_feature == "text" ? "line" : o.text_feature;
}

void CheckTextOptions(const TextInputOptions& o, const std::string& format,
                      const std::string& sec) {
  if (!o.enabled()) {
    if (o.bucketed()) {
      Bad(sec, "bucket_boundaries", "buckets need a tokenizer",
          "set " + sec + ".tokenizer (byte, bpe, wordpiece or lookup)");
    }
    return;
  }
  if (format == "hdf5" || format == "idx" || format == "csv" || format == "fixed" ||
      format == "images") {
    Bad(sec, "tokenizer", "format " + format + " has no text feature to tokenize",
        "tfrecord (a bytes feature of any length), jsonl (a string field) or text (lines)");
  }
  if (o.pack > 0) {
    if (o.bucketed() || o.pad_to != "max" || o.mask || o.max_tokens > 0) {
      Bad(sec, "pack",
          "pack makes blocks of T tokens: bucket_boundaries, pad_to, mask and max_tokens do not "
          "apply to it",
          "leave them out with pack");
    }
    return;
  }
  if (o.max_tokens < 1) {
    Bad(sec, "max_tokens", "a tokenizer needs max_tokens (the model's context, >= 1)");
  }
  if (o.bucketed() && o.bucket_batch_sizes.size() != o.bucket_boundaries.size() + 1) {
    Bad(sec, "bucket_batch_sizes",
        "needs one batch size per bucket: " + std::to_string(o.bucket_boundaries.size() + 1) +
            " for " + std::to_string(o.bucket_boundaries.size()) + " boundaries, got " +
            std::to_string(o.bucket_batch_sizes.size()));
  }
  if (!o.bucketed() && !o.bucket_batch_sizes.empty()) {
    Bad(sec, "bucket_batch_sizes", "bucket batch sizes need bucket_boundaries");
  }
  for (size_t i = 0; i < o.bucket_boundaries.size(); ++i) {
    const int64_t b = o.bucket_boundaries[i];
    if (b < 1 || b > o.max_tokens || (i > 0 && b <= o.bucket_boundaries[i - 1])) {
      Bad(sec, "bucket_boundaries",
          "boundaries must be strictly increasing, in [1, max_tokens = " +
              std::to_string(o.max_tokens) + "]");
    }
  }
  for (const int64_t b : o.bucket_batch_sizes) {
    if (b < 1) Bad(sec, "bucket_batch_sizes", "batch sizes must be >= 1");
  }
  if (o.pad_to == "bucket" && !o.bucketed()) {
    Bad(sec, "pad_to", "pad_to = bucket needs bucket_boundaries");
  }
  if (o.pad_to == "bucket" && o.bucket_boundaries.back() <= o.max_tokens) {
    // The last bucket holds lengths >= its boundary: it has no boundary to pad to.
    Bad(sec, "pad_to",
        "pad_to = bucket needs a last boundary above max_tokens (" + std::to_string(o.max_tokens) +
            "), so that every document has a bucket to pad to",
        "append max_tokens + 1 to " + sec + ".bucket_boundaries");
  }
}

namespace {

// Tokenizers already read, by their options: an evaluation pipeline is rebuilt every epoch, and
// the counting pass and the pipeline need the same one.
struct TokenizerCache {
  Mutex mu;
  std::map<std::string, std::shared_ptr<const text::Tokenizer>> made GUARDED_BY(mu);
};

}  // namespace

std::shared_ptr<const text::Tokenizer> MakeInputTokenizer(const TextInputOptions& o,
                                                          const std::string& sec) {
  static TokenizerCache cache;
  const std::string key = o.tokenizer + "\n" + o.bpe_vocab + "\n" + o.bpe_merges + "\n" +
                          o.wordpiece_vocab + "\n" + o.lookup_vocab + "\n" +
                          std::to_string(o.oov_buckets) + (o.lowercase ? "\nlower" : "\ncase");
  {
    MutexLock lock(cache.mu);
    const auto it = cache.made.find(key);
    if (it != cache.made.end()) return it->second;
  }
  auto made = std::make_shared<const text::Tokenizer>(
      text::Tokenizer::Make({.kind = o.tokenizer,
                             .bpe_vocab = o.bpe_vocab,
                             .bpe_merges = o.bpe_merges,
                             .wordpiece_vocab = o.wordpiece_vocab,
                             .lookup_vocab = o.lookup_vocab,
                             .oov_buckets = o.oov_buckets,
                             .lowercase = o.lowercase,
                             .key_prefix = sec + "."}));
  MutexLock lock(cache.mu);
  return cache.made.emplace(key, std::move(made)).first->second;
}

MapFn MakeTextStep(const TextInputOptions& o, const std::string& format, const std::string& sec,
                   std::shared_ptr<const text::Tokenizer> tokenizer,
                   std::shared_ptr<TokenizeCounts> counts) {
  const bool stacked = o.pad_to == "max" && !o.bucketed() && !o.mask && o.pack == 0;
  return MakeTokenizeOp(std::move(tokenizer),
                        {.input = DocumentFeature(o, format),
                         .output = kTokensFeature,
                         .length = kLengthFeature,
                         .max_tokens = o.pack > 0 ? 0 : o.max_tokens,
                         .fail_too_long = o.too_long == "fail",
                         .pad_to = stacked ? o.max_tokens : 0,
                         .too_long_key = sec + ".too_long"},
                        std::move(counts));
}

PaddedBatchOptions TextPadding(const TextInputOptions& o, const text::Tokenizer& tokenizer) {
  PaddedBatchOptions p;
  p.padding_values = {{kTokensFeature, static_cast<double>(tokenizer.pad_id())}};
  if (o.pad_to == "max") p.padded_shapes = {{kTokensFeature, {o.max_tokens}}};
  if (o.mask) p.masks = {kTokensFeature};
  return p;
}

PackOptions TextPacking(const TextInputOptions& o, const text::Tokenizer& tokenizer) {
  return {.feature = kTokensFeature,
          .block = o.pack,
          .end_id = tokenizer.end_id(),
          .input = kPackedInputFeature,
          .target = kPackedTargetFeature};
}

BucketOptions TextBuckets(const TextInputOptions& o, const text::Tokenizer& tokenizer,
                          bool drop_remainder) {
  return {.length_feature = kLengthFeature,
          .boundaries = o.bucket_boundaries,
          .batch_sizes = o.bucket_batch_sizes,
          .pad_to_bucket_boundary = o.pad_to == "bucket",
          .sequence_features = {kTokensFeature},
          .drop_remainder = drop_remainder,
          .padding = TextPadding(o, tokenizer)};
}

}  // namespace shardflow::pipeline
