#include "apps/predict/predict_config.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "io/pipeline/feature_spec.hpp"

namespace shardflow::predict {
namespace {

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    std::string part = text.substr(begin, end - begin);
    const size_t first = part.find_first_not_of(" \t");
    const size_t last = part.find_last_not_of(" \t");
    if (first != std::string::npos) out.push_back(part.substr(first, last - first + 1));
    begin = end + 1;
  }
  return out;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void RegisterPredictConfig(ConfigSchema& schema, PredictAppConfig* c) {
  apps::RegisterExperimentConfig(schema, &c->train);
  schema.DescribeSection("predict", "batch prediction (shardflow-predict)");
  schema.Add("predict", "batch_size", &c->batch_size, "records per forward pass").Positive();
  schema.Add("predict", "id_feature", &c->id_feature,
             "int64 feature holding each record's global id (shardflow-convert writes `id`); "
             "records without it get their global record index (files in name order, then "
             "records in file order, from 0; csv, text, jsonl, fixed, images: (file << 40) | "
             "offset); empty: always that index");
  schema
      .Add("predict", "generate_tokens", &c->generate_tokens,
           "--generate: tokens (bytes) to sample after the prompt")
      .Positive();
  schema
      .Add("predict", "temperature", &c->temperature,
           "--generate: softmax temperature; 0 = greedy (the most likely token)")
      .NonNegative();
  schema
      .Add("predict", "top_k", &c->top_k,
           "--generate: sample among the k most likely tokens; 0 = all")
      .NonNegative();
  schema.Add("predict", "seed", &c->seed, "--generate: the draws' seed (same text for a seed)");
}

void AddPredictFlags(AppSpec& app, PredictAppConfig* c) {
  app.Flag("checkpoint", &c->checkpoint, "CKPT",
           "a checkpoint file, or a directory whose newest intact checkpoint is used")
      .Flag("input", &c->input, "FILES",
            "comma-separated globs of the records to predict (replaces data.files)")
      .Flag("output", &c->output, "PATH",
            "predictions: HDF5 when PATH ends in .h5 (ids, classes, probabilities or errors), "
            "else CSV")
      .Flag("generate", &c->generate, "PROMPT",
            "sample text after PROMPT from a byte-level language model (configs/text_lm.ini) "
            "and print it, instead of predicting records (predict.temperature, top_k, seed, "
            "generate_tokens)");
}

bool IsHdf5Output(const std::string& output) {
  return EndsWith(output, ".h5") || EndsWith(output, ".hdf5");
}

void PrepareInputSpec(PredictAppConfig* c) {
  if (c->checkpoint.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--checkpoint is required", {.key = "--checkpoint"});
  }
  if (!c->generate.empty()) return;  // no records: text from a prompt
  if (c->output.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "--output is required", {.key = "--output"});
  }
  pipeline::InputSpec& spec = c->train.data;
  if (!c->input.empty()) spec.data.files = SplitComma(c->input);
  if (spec.data.files.empty() && spec.data.format != "images") {  // images: data.root or list
    throw Error(ErrorCode::kInvalidArgument, "no input files (give --input or data.files)",
                {.key = "--input"});
  }
  spec.data.shuffle_files = false;
  spec.data.shuffle_buffer = 0;
  spec.data.drop_remainder = false;
  spec.data.epochs = 1;
  spec.data.batch_size = 1;
  if (spec.text.packed()) {
    throw Error(ErrorCode::kInvalidArgument,
                "blocks packed from text in the pipeline have no ids of their own (a long "
                "document gives several blocks its id), so they cannot be predicted per record",
                {.key = "data.pack",
                 .hint = "shardflow-convert --input.format documents --preprocess.pack T writes "
                         "blocks with ids to predict on"});
  }
  // Records in file order, one at a time: no buckets; every text padded to the model's context.
  spec.text.bucket_boundaries.clear();
  spec.text.bucket_batch_sizes.clear();
  spec.text.pad_to = "max";
  const std::vector<std::string> kept = pipeline::EvaluationAugmentations(spec.data.augmentations);
  if (kept != spec.data.augmentations) {
    std::string text;
    for (const std::string& a : kept) text += (text.empty() ? "" : ", ") + a;
    SF_LOG0(Info) << "prediction applies [data]'s augmentations without the random ones: "
                  << (text.empty() ? "none" : text);
  }
  spec.data.augmentations = kept;
  if (!c->id_feature.empty() && spec.data.format == "tfrecord") {
    const bool declared = std::any_of(spec.features.begin(), spec.features.end(), [&](auto& f) {
      return pipeline::ParseFeatureSpec(f).name == c->id_feature;
    });
    if (!declared) spec.features.push_back(c->id_feature + ":int64:int64:scalar:-1");
  }
}

}  // namespace shardflow::predict
