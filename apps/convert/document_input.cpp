#include "apps/convert/document_input.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/convert/shard_plan.hpp"
#include "apps/convert/shard_writer.hpp"
#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/text/byte_tokenizer.hpp"
#include "io/text/documents.hpp"
#include "io/text/lm_packing.hpp"

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

}  // namespace

int RunDocuments(MpiEnvironment& env, const ConvertOptions& o, comm::Communicator& comm) {
  const std::vector<std::string> files = pipeline::ListFiles(o.files);
  text::DocumentCounts counts;
  const std::vector<text::Document> docs = text::ReadDocuments(files, o.documents, &counts);
  std::vector<std::vector<int64_t>> train, heldout;
  int64_t bytes = 0;
  for (size_t i = 0; i < docs.size(); ++i) {
    auto& to = HeldOut(static_cast<int64_t>(i), o.holdout) ? heldout : train;
    to.emplace_back();
    ByteTokenizer::Encode(docs[i].text, &to.back());
    bytes += static_cast<int64_t>(docs[i].text.size());
  }
  const PackedBlocks train_blocks = text::PackForLanguageModel(train, ByteTokenizer::kEnd, o.pack);
  const PackedBlocks heldout_blocks =
      text::PackForLanguageModel(heldout, ByteTokenizer::kEnd, o.pack);
  if (train_blocks.count == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "the training documents hold " + std::to_string(train_blocks.stream.size()) +
                    " tokens, fewer than one block of " + std::to_string(o.pack) + " + 1",
                {.key = "preprocess.pack", .hint = "a shorter preprocess.pack or more files"});
  }
  nlohmann::json meta = {{"format", "documents"},
                         {"documents", counts.documents},
                         {"empty_documents_skipped", counts.empty_skipped},
                         {"heldout_documents", static_cast<int64_t>(heldout.size())},
                         {"bytes", bytes},
                         {"tokenizer", o.tokenizer},
                         {"vocabulary", ByteTokenizer::kVocabulary},
                         {"end_token", ByteTokenizer::kEnd},
                         {"pad_token", ByteTokenizer::kPad},
                         {"block", o.pack},
                         {"data_features", "input:int64:float32:" + std::to_string(o.pack) +
                                               ", target:int64:int64:" + std::to_string(o.pack)}};
  WriteBlocks(o, train_blocks, "train", env.rank(), env.size(), &meta);
  WriteBlocks(o, heldout_blocks, "heldout", env.rank(), env.size(), &meta);
  if (heldout_blocks.count > 0) {
    const text::BaselineLosses base =
        text::NgramBaselines(train_blocks, heldout_blocks, ByteTokenizer::kVocabulary);
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
