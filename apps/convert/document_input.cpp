#include "apps/convert/document_input.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "apps/convert/shard_plan.hpp"
#include "apps/convert/shard_writer.hpp"
#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/text/bag_of_words.hpp"
#include "io/text/documents.hpp"
#include "io/text/lm_packing.hpp"
#include "io/text/tokenizer.hpp"

namespace shardflow::convert {
namespace {

using text::PackedBlocks;

// Document i is held out when floor((i + 1) h) > floor(i h): h of them, evenly spread.
bool HeldOut(int64_t i, double h) {
  return std::floor(static_cast<double>(i + 1) * h) > std::floor(static_cast<double>(i) * h);
}

// This rank's shards of `blocks` under PREFIX-<part>.
void WriteBlocks(const ConvertOptions& o, const PackedBlocks& blocks, const std::string& part,
                 int rank, int ranks, nlohmann::json* meta) {
  ConvertOptions out = o;
  out.out_path = o.out_path + "-" + part;
  const ShardPlan plan(blocks.count, o.shards, rank, ranks);
  ProgressReporter progress(plan.MyRecords().size(),
                            {.label = "convert " + part, .unit = "blocks"});
  WriteShardRecords(plan, out, progress, [&](int64_t id, io::ExampleBuilder& b) {
    b.AddInt64("input", blocks.Input(id));
    b.AddInt64("target", blocks.Target(id));
    b.AddInt64("id", {id});
  });
  progress.Finish();
  nlohmann::json files = nlohmann::json::array();
  for (int64_t s = 0; s < plan.shards(); ++s) {
    files.push_back(
        std::filesystem::path(ShardFileName(out.out_path, s, plan.shards(), o.compression))
            .filename()
            .string());
  }
  (*meta)[part] = {{"blocks", blocks.count},
                   {"tokens", static_cast<int64_t>(blocks.stream.size())},
                   {"dropped_tail_tokens", blocks.dropped_tokens},
                   {"files", files}};
}

// The tokenizer of preprocess.tokenizer: byte, wordpiece, or BPE learned from the training
// documents (written beside the shards) or read from preprocess.bpe_vocab / bpe_merges.
text::Tokenizer MakeTokenizer(const ConvertOptions& o, const std::vector<std::string>& train_texts,
                              int rank, nlohmann::json* meta) {
  if (o.tokenizer == "wordpiece") {
    (*meta)["wordpiece"] = {{"vocab", o.wordpiece_vocab}, {"lowercase", o.lowercase}};
  }
  if (o.tokenizer != "bpe" || !o.bpe_vocab.empty()) {
    if (o.tokenizer == "bpe") (*meta)["bpe"] = {{"vocab", o.bpe_vocab}, {"merges", o.bpe_merges}};
    return text::Tokenizer::Make({.kind = o.tokenizer,
                                  .bpe_vocab = o.bpe_vocab,
                                  .bpe_merges = o.bpe_merges,
                                  .wordpiece_vocab = o.wordpiece_vocab,
                                  .lowercase = o.lowercase,
                                  .key_prefix = "preprocess."});
  }
  text::Tokenizer t = text::Tokenizer::FromBpe(text::Bpe::Learn(train_texts, o.vocabulary));
  const std::string vocab = o.out_path + ".vocab.json", merges = o.out_path + ".merges.txt";
  if (rank == 0) t.bpe()->Write(vocab, merges);
  (*meta)["bpe"] = {{"vocab", std::filesystem::path(vocab).filename().string()},
                    {"merges", std::filesystem::path(merges).filename().string()},
                    {"learned_merges", t.bpe()->merges()}};
  return t;
}

}  // namespace

// One classification record per document: `tokens` padded to max_tokens, `length`, `label`
// (the document's file), `id`. Longer documents are cut (counted) or, under too_long = fail,
// an error naming the file and the document.
struct Labelled {
  std::vector<std::vector<int64_t>> tokens;
  std::vector<int64_t> labels;
  int64_t truncated = 0;
};

void WriteRecords(const ConvertOptions& o, const Labelled& docs, int64_t pad,
                  const std::string& part, int rank, int ranks, nlohmann::json* meta) {
  ConvertOptions out = o;
  out.out_path = o.out_path + "-" + part;
  const auto n = static_cast<int64_t>(docs.tokens.size());
  const ShardPlan plan(n, o.shards, rank, ranks);
  ProgressReporter progress(plan.MyRecords().size(),
                            {.label = "convert " + part, .unit = "documents"});
  std::vector<int64_t> padded(static_cast<size_t>(o.max_tokens));
  WriteShardRecords(plan, out, progress, [&](int64_t id, io::ExampleBuilder& b) {
    const auto& t = docs.tokens[static_cast<size_t>(id)];
    std::fill(padded.begin(), padded.end(), pad);
    std::copy(t.begin(), t.end(), padded.begin());
    b.AddInt64("tokens", padded);
    b.AddInt64("length", {static_cast<int64_t>(t.size())});
    b.AddInt64("label", {docs.labels[static_cast<size_t>(id)]});
    b.AddInt64("id", {id});
  });
  progress.Finish();
  (*meta)[part] = {{"documents", n}, {"truncated", docs.truncated}};
}

Labelled Label(const ConvertOptions& o, std::vector<std::vector<int64_t>> tokens,
               const std::vector<const text::Document*>& docs,
               const std::vector<std::string>& files) {
  Labelled out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (static_cast<int64_t>(tokens[i].size()) > o.max_tokens) {
      if (o.too_long == "fail") {
        throw Error(
            ErrorCode::kInvalidArgument,
            "document " + std::to_string(docs[i]->index) + " has " +
                std::to_string(tokens[i].size()) +
                " tokens, more than preprocess.max_tokens = " + std::to_string(o.max_tokens),
            {.file = files[static_cast<size_t>(docs[i]->file)],
             .key = "preprocess.too_long",
             .hint = "preprocess.too_long = truncate cuts it (and counts it)"});
      }
      tokens[i].resize(static_cast<size_t>(o.max_tokens));
      ++out.truncated;
    }
    out.labels.push_back(docs[i]->file);
  }
  out.tokens = std::move(tokens);
  return out;
}

void WriteMetaFile(const std::string& path, const nlohmann::json& meta) {
  std::ofstream out(path);
  out << meta.dump(2) << "\n";
  out.close();
  if (!out) throw Error(ErrorCode::kIo, "cannot write the metadata file", {.file = path});
}

int RunClassification(MpiEnvironment& env, const ConvertOptions& o, comm::Communicator& comm,
                      const std::vector<std::string>& files, const text::Tokenizer& tok,
                      const Labelled& train, const Labelled& heldout,
                      const text::DocumentCounts& counts, int64_t bytes, nlohmann::json meta) {
  nlohmann::json classes = nlohmann::json::array();
  for (const std::string& f : files) classes.push_back(std::filesystem::path(f).stem().string());
  meta.update({{"format", "documents"},
               {"task", "classify"},
               {"documents", counts.documents},
               {"empty_documents_skipped", counts.empty_skipped},
               {"bytes", bytes},
               {"tokenizer", o.tokenizer},
               {"vocabulary", tok.vocabulary()},
               {"pad_token", tok.pad_id()},
               {"max_tokens", o.max_tokens},
               {"classes", classes},
               {"data_features", "tokens:int64:float32:" + std::to_string(o.max_tokens) +
                                     ", label:int64:int64:scalar"}});
  WriteRecords(o, train, tok.pad_id(), "train", env.rank(), env.size(), &meta);
  WriteRecords(o, heldout, tok.pad_id(), "heldout", env.rank(), env.size(), &meta);
  if (!heldout.tokens.empty()) {
    const text::BagOfWordsAccuracy base =
        text::NaiveBayesBaseline(train.tokens, train.labels, heldout.tokens, heldout.labels,
                                 tok.vocabulary(), static_cast<int64_t>(files.size()));
    meta["heldout_baselines_accuracy"] = {{"naive_bayes_bag_of_words", base.naive_bayes},
                                          {"majority_class", base.majority}};
    SF_LOG0(Info) << "held-out accuracy of the baselines: bag-of-words naive Bayes "
                  << base.naive_bayes << ", majority class " << base.majority;
  }
  SF_LOG0(Info) << counts.documents << " documents in " << files.size() << " classes ("
                << counts.empty_skipped << " empty skipped), " << heldout.tokens.size()
                << " held out; " << train.truncated + heldout.truncated << " cut to "
                << o.max_tokens << " tokens";
  comm::Barrier(comm);
  if (env.rank() == 0) WriteMetaFile(o.out_path + ".meta.json", meta);
  return 0;
}

int RunDocuments(MpiEnvironment& env, const ConvertOptions& o, comm::Communicator& comm) {
  const std::vector<std::string> files = pipeline::ListFiles(o.files);
  text::DocumentCounts counts;
  const std::vector<text::Document> docs = text::ReadDocuments(files, o.documents, &counts);
  std::vector<std::string> train_texts, heldout_texts;
  std::vector<const text::Document*> train_docs, heldout_docs;
  int64_t bytes = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    const bool held = HeldOut(static_cast<int64_t>(i), o.holdout);
    (held ? heldout_texts : train_texts).push_back(docs[i].text);
    (held ? heldout_docs : train_docs).push_back(&docs[i]);
    bytes += static_cast<int64_t>(docs[i].text.size());
  }
  nlohmann::json meta;
  const text::Tokenizer tok = MakeTokenizer(o, train_texts, env.rank(), &meta);
  std::vector<std::vector<int64_t>> train(train_texts.size()), heldout(heldout_texts.size());
  int64_t unknown_words = 0;
  for (size_t i = 0; i < train.size(); ++i) unknown_words += tok.Encode(train_texts[i], &train[i]);
  for (size_t i = 0; i < heldout.size(); ++i) {
    unknown_words += tok.Encode(heldout_texts[i], &heldout[i]);
  }
  if (o.tokenizer == "wordpiece") {
    meta["unknown_words"] = unknown_words;
    SF_LOG0(Info) << unknown_words << " words are not in the WordPiece vocabulary: [UNK]";
  }
  if (o.max_tokens > 0) {
    return RunClassification(
        env, o, comm, files, tok, Label(o, std::move(train), train_docs, files),
        Label(o, std::move(heldout), heldout_docs, files), counts, bytes, std::move(meta));
  }
  const PackedBlocks train_blocks = text::PackForLanguageModel(train, tok.end_id(), o.pack);
  const PackedBlocks heldout_blocks = text::PackForLanguageModel(heldout, tok.end_id(), o.pack);
  if (train_blocks.count == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "the training documents hold " + std::to_string(train_blocks.stream.size()) +
                    " tokens, fewer than one block of " + std::to_string(o.pack) + " + 1",
                {.key = "preprocess.pack", .hint = "a shorter preprocess.pack or more files"});
  }
  meta.update({{"format", "documents"},
               {"documents", counts.documents},
               {"empty_documents_skipped", counts.empty_skipped},
               {"heldout_documents", static_cast<int64_t>(heldout.size())},
               {"bytes", bytes},
               {"tokenizer", o.tokenizer},
               {"vocabulary", tok.vocabulary()},
               {"end_token", tok.end_id()},
               {"pad_token", tok.pad_id()},
               {"block", o.pack},
               {"data_features", "input:int64:float32:" + std::to_string(o.pack) +
                                     ", target:int64:int64:" + std::to_string(o.pack)}});
  WriteBlocks(o, train_blocks, "train", env.rank(), env.size(), &meta);
  WriteBlocks(o, heldout_blocks, "heldout", env.rank(), env.size(), &meta);
  if (heldout_blocks.count > 0) {
    const text::BaselineLosses base =
        text::NgramBaselines(train_blocks, heldout_blocks, tok.vocabulary());
    meta["heldout_baselines_nats_per_token"] = {{"unigram", base.unigram}, {"bigram", base.bigram}};
    SF_LOG0(Info) << "held-out cross-entropy of n-gram baselines (nats per token): unigram "
                  << base.unigram << ", bigram " << base.bigram;
  }
  SF_LOG0(Info) << counts.documents << " documents (" << counts.empty_skipped << " empty skipped), "
                << heldout.size() << " held out; " << train_blocks.count << " training and "
                << heldout_blocks.count << " held-out blocks of " << o.pack << " tokens";
  comm::Barrier(comm);
  if (env.rank() == 0) {
    const std::string path = o.out_path + ".meta.json";
    std::ofstream out(path);
    out << meta.dump(2) << "\n";
    out.close();
    if (!out) throw Error(ErrorCode::kIo, "cannot write the metadata file", {.file = path});
  }
  return 0;
}

}  // namespace shardflow::convert
