#include "apps/convert/document_input.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "apps/convert/shard_plan.hpp"
#include "apps/convert/shard_writer.hpp"
#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/text/bpe.hpp"
#include "io/text/byte_tokenizer.hpp"
#include "io/text/documents.hpp"
#include "io/text/lm_packing.hpp"
#include "io/text/wordpiece.hpp"

namespace shardflow::convert {
namespace {

using text::ByteTokenizer;
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

// The tokenizer of preprocess.tokenizer: byte, or BPE learned from the training documents
// (written beside the shards) or read from preprocess.bpe_vocab / bpe_merges.
struct Tokenizer {
  std::optional<text::Bpe> bpe;
  std::optional<text::WordPiece> wordpiece;
  mutable int64_t unknown_words = 0;  // wordpiece: words that became [UNK]
  int64_t end = ByteTokenizer::kEnd, pad = ByteTokenizer::kPad,
          vocabulary = ByteTokenizer::kVocabulary;
  void Encode(std::string_view s, std::vector<int64_t>* out) const {
    if (bpe) {
      bpe->Encode(s, out);
    } else if (wordpiece) {
      unknown_words += wordpiece->Encode(s, out);
    } else {
      ByteTokenizer::Encode(s, out);
    }
  }
};

Tokenizer MakeTokenizer(const ConvertOptions& o, const std::vector<std::string>& train_texts,
                        int rank, nlohmann::json* meta) {
  Tokenizer t;
  if (o.tokenizer == "wordpiece") {
    t.wordpiece = text::WordPiece::Read(o.wordpiece_vocab, o.lowercase);
    if (t.wordpiece->sep_id() < 0 || t.wordpiece->pad_id() < 0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the WordPiece vocabulary needs [SEP] (the end of a document) and [PAD]",
                  {.file = o.wordpiece_vocab, .key = "preprocess.wordpiece_vocab"});
    }
    t.end = t.wordpiece->sep_id();
    t.pad = t.wordpiece->pad_id();
    t.vocabulary = t.wordpiece->vocabulary();
    (*meta)["wordpiece"] = {{"vocab", o.wordpiece_vocab}, {"lowercase", o.lowercase}};
    return t;
  }
  if (o.tokenizer != "bpe") return t;
  if (!o.bpe_vocab.empty()) {
    t.bpe = text::Bpe::Read(o.bpe_vocab, o.bpe_merges);
    (*meta)["bpe"] = {{"vocab", o.bpe_vocab}, {"merges", o.bpe_merges}};
  } else {
    t.bpe = text::Bpe::Learn(train_texts, o.vocabulary);
    const std::string vocab = o.out_path + ".vocab.json", merges = o.out_path + ".merges.txt";
    if (rank == 0) t.bpe->Write(vocab, merges);
    (*meta)["bpe"] = {{"vocab", std::filesystem::path(vocab).filename().string()},
                      {"merges", std::filesystem::path(merges).filename().string()},
                      {"learned_merges", t.bpe->merges()}};
  }
  t.end = t.bpe->end_id();
  t.pad = t.bpe->pad_id();
  t.vocabulary = t.bpe->vocabulary();
  return t;
}

}  // namespace

int RunDocuments(MpiEnvironment& env, const ConvertOptions& o, comm::Communicator& comm) {
  const std::vector<std::string> files = pipeline::ListFiles(o.files);
  text::DocumentCounts counts;
  const std::vector<text::Document> docs = text::ReadDocuments(files, o.documents, &counts);
  std::vector<std::string> train_texts, heldout_texts;
  int64_t bytes = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    (HeldOut(static_cast<int64_t>(i), o.holdout) ? heldout_texts : train_texts)
        .push_back(docs[i].text);
    bytes += static_cast<int64_t>(docs[i].text.size());
  }
  nlohmann::json meta;
  const Tokenizer tok = MakeTokenizer(o, train_texts, env.rank(), &meta);
  std::vector<std::vector<int64_t>> train(train_texts.size()), heldout(heldout_texts.size());
  for (size_t i = 0; i < train.size(); ++i) tok.Encode(train_texts[i], &train[i]);
  for (size_t i = 0; i < heldout.size(); ++i) tok.Encode(heldout_texts[i], &heldout[i]);
  if (tok.wordpiece) {
    meta["unknown_words"] = tok.unknown_words;
    SF_LOG0(Info) << tok.unknown_words << " words are not in the WordPiece vocabulary: [UNK]";
  }
  const PackedBlocks train_blocks = text::PackForLanguageModel(train, tok.end, o.pack);
  const PackedBlocks heldout_blocks = text::PackForLanguageModel(heldout, tok.end, o.pack);
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
               {"vocabulary", tok.vocabulary},
               {"end_token", tok.end},
               {"pad_token", tok.pad},
               {"block", o.pack},
               {"data_features", "input:int64:float32:" + std::to_string(o.pack) +
                                     ", target:int64:int64:" + std::to_string(o.pack)}});
  WriteBlocks(o, train_blocks, "train", env.rank(), env.size(), &meta);
  WriteBlocks(o, heldout_blocks, "heldout", env.rank(), env.size(), &meta);
  if (heldout_blocks.count > 0) {
    const text::BaselineLosses base =
        text::NgramBaselines(train_blocks, heldout_blocks, tok.vocabulary);
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
