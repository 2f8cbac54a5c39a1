// DataOptions: the [data] section of an experiment as a struct, and BuildPipeline, which turns
// it plus a record-source factory into this rank's Dataset. Parsing the INI file is
// core/config's job; this only validates values (Error(kInvalidArgument) naming the key).
//
// The pipeline built (docs/design.md "data flow"):
//   ListFiles(files, shuffled by seed) -> factory(format, files) -> PlanShards(shard_policy)
//   -> interleave(parallel_reads) -> [cache] -> shuffle-and-repeat(shuffle_buffer, seed, epochs)
//   -> map-and-batch(decode + augmentations, parallel_calls, batch_size) -> prefetch
// (a tokenized input: map(decode + tokenize) -> padded_batch or bucket_by_sequence_length).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/pipeline/dataset.hpp"
#include "io/pipeline/record_source.hpp"
#include "io/pipeline/shard_policy.hpp"

namespace shardflow::pipeline {

struct DataOptions {
  // Glob patterns of the input files. Required.
  std::vector<std::string> files;
  // Record format, handed to the source factory ("tfrecord", "hdf5", ...).
  std::string format = "tfrecord";
  // How ranks split the files: file | record | byte_range | auto (see shard_policy.hpp).
  ShardPolicy shard_policy = ShardPolicy::kAuto;
  // Files are listed in a seeded random order (the same on every rank) when true.
  bool shuffle_files = true;
  // Shuffle window in elements (0: no shuffle) and its byte bound. Larger windows shuffle
  // better and cost memory; the byte bound keeps large records from exhausting RAM.
  int64_t shuffle_buffer = 10000;
  int64_t shuffle_buffer_bytes = int64_t{1} << 30;
  // Files read at once (interleave cycle), each ahead on its own thread when > 1. kAutotune:
  // min(4, CPU budget).
  int parallel_reads = kAutotune;
  // Files interleaved at once, which fixes the element order (kAutotune: the resolved
  // parallel_reads). Set it to keep the order when changing parallel_reads.
  int cycle_length = kAutotune;
  // Decode/augment threads of the fused map-and-batch (kAutotune: one per core of the CPU
  // budget, DefaultCpuBudget(); 0: on the consumer thread).
  int parallel_calls = kAutotune;
  // Batches read ahead by a background thread (0: none; kAutotune: tuned within the RAM budget).
  int64_t prefetch = kAutotune;
  // "" none, "memory", or a file path for a cache that survives restarts (each rank has its
  // own file, PATH.rankR-of-N).
  std::string cache;
  // A damaged cache file is refilled with a warning (data.on_corrupt = skip) instead of failing.
  bool cache_refill_damaged = false;
  // data.on_corrupt = skip: an element whose decode or augmentation fails on damaged data
  // (Error kDataLoss: a corrupt or truncated JPEG or PNG, a malformed Example) is dropped from
  // its batch and counted (CountSkip) instead of failing the pass (MapOptions::on_data_loss);
  // the map then always runs fused with the batch (one worker when parallel_calls = 0), so
  // the batches are the same for any parallel_calls.
  bool skip_corrupt_elements = false;
  // Same element sequence for any thread count (false lets fast elements overtake slow ones).
  bool deterministic = true;
  // Seed for file order, shuffle and random augmentations.
  uint64_t seed = 0;
  // A NaN or Inf in a float input feature (TFRecord features of kind float) is a bad record,
  // handled like a damaged one by on_corrupt: fail naming file, record and feature, or skip
  // it and count it. false lets such values through to the model.
  bool check_finite = true;
  // Applied after decode, in order: "random_flip", "random_crop:HxW", "resize:HxW",
  // "random_resized_crop:HxW[:SMIN,SMAX[:RMIN,RMAX]]" (torchvision's RandomResizedCrop;
  // defaults 0.08,1 and 0.75,1.3333), "center_crop:HxW[:FRACTION]" (default 0.875; both resize
  // to HxW, float32, ops/resized_crop.hpp), "scale:F" (cast to float32 and multiply),
  // "normalize:M1,M2,../S1,S2,..", "one_hot:KEY:DEPTH".
  std::vector<std::string> augmentations;
  // When the first augmentation is random_resized_crop or center_crop, the image feature's
  // decode is fused into it (FusesDecodeAndCrop): a JPEG is decoded only in the crop window,
  // DCT-downscaled when the window is >= 2x the output. false: decode whole, then crop.
  bool fuse_decode_crop = true;
  // Not a config key; set by BuildInputPipeline when it fuses: the channels (0, 1, 3) the crop
  // op decodes encoded image bytes to, the image decode's own.
  int decode_channels = 0;
  // Feature the augmentations apply to (the decoded image).
  std::string image_feature = "image";
  int64_t batch_size = 32;
  bool drop_remainder = false;
  // Passes over the data (-1: forever).
  int64_t epochs = 1;
  // Not config keys; set by the training app for elastic resume (apps/train/rank_input.hpp).
  // row_ids: every decoded example gets feature kRowIdFeature (int64 scalar, its element id
  // MakeElementId(file, offset)), so batches name the records they hold.
  bool row_ids = false;
  // Ranks' shares of the records (PlanShards' weights): the per-rank batches when a global batch
  // does not divide over the ranks; empty: equal shares.
  std::vector<int64_t> shard_weights;
  // When set, this rank reads exactly these records (element ids of a format with byte ranges),
  // in this order: no sharding, interleave, cache or shuffle (the order is the caller's).
  std::shared_ptr<const std::vector<int64_t>> only_records;
  // When set, this rank reads the records this function hands out, one at a time until it
  // returns nullopt (element ids, as only_records; called on the pipeline's thread): dynamic
  // sharding's claims (apps/train/dynamic_shard.hpp). As only_records otherwise.
  std::function<std::optional<int64_t>()> record_provider;
  // Not config keys; set by BuildInputPipeline for a tokenized input (text_input.hpp): batches
  // padded (padded_batch) or bucketed (bucket_by_sequence_length, batch_size then unused)
  // instead of stacked; the decode map then runs before them, on parallel_calls workers.
  std::shared_ptr<const PaddedBatchOptions> padded_batch;
  std::shared_ptr<const BucketOptions> buckets;
  std::shared_ptr<const PackOptions> packing;  // blocks of a language model, then stacked
};

// The per-example feature DataOptions::row_ids adds (batched to int64 [B]).
inline constexpr const char* kRowIdFeature = "_row_id";

// Opens the files of one format. Called once per rank with the full (unsharded) file list.
using SourceFactory = std::function<std::shared_ptr<const RecordSource>(
    const std::string& format, const std::vector<std::string>& files)>;

struct BuiltPipeline {
  Dataset dataset;
  ShardPlan plan;
  std::string description;  // one line for the log: policy (and why), files, units, stages
};

// decode: record element -> features (e.g. parse Example, decode image); may be empty.
// REQUIRES: 0 <= rank < num_ranks.
BuiltPipeline BuildPipeline(const DataOptions& options, const SourceFactory& factory, MapFn decode,
                            int rank, int num_ranks);

// One augmentation spec (see DataOptions::augmentations) as a map function. `channels`: what the
// crop ops decode encoded image bytes to (the fused decode; see DataOptions::decode_channels).
// A bad spec is Error(kInvalidArgument) naming the key `augmentations`.
MapFn ParseAugmentation(const std::string& spec, const std::string& feature, uint64_t seed,
                        int channels = 0);

// Whether the image decode is fused into the first augmentation: fuse_decode_crop and the first
// augmentation is random_resized_crop or center_crop. The decode step (BuildInputPipeline) then
// leaves JPEG bytes encoded in the image feature for that op.
bool FusesDecodeAndCrop(const DataOptions& options);

// A config list splits at every comma, also inside an augmentation's numbers
// ("normalize:123.675,116.28,103.53/58.395,57.12,57.375" or "random_resized_crop:8x8:0.5,1"):
// rejoins each item that does not start with a letter to the one before it, with its comma.
std::vector<std::string> JoinAugmentationArgs(const std::vector<std::string>& items);

// True when `augmentations` bring every image to one size (random_crop, random_resized_crop,
// center_crop or resize): what an image feature of any size ("*x*x3") needs before batching.
bool SizesImages(const std::vector<std::string>& augmentations);
// The deterministic counterpart of training augmentations, for evaluation and prediction:
// random_resized_crop:HxW[:...] becomes center_crop:HxW (the central 0.875 of the short side:
// torchvision's Resize(H / 0.875) + CenterCrop(H), Keras' and tf's ImageNet evaluation); the
// other random ops (random_flip, random_crop) are dropped; the rest stay, in order.
std::vector<std::string> EvaluationAugmentations(const std::vector<std::string>& train);

}  // namespace shardflow::pipeline
