// The training app's entry point into io: [data]-style config keys, this rank's pipeline of
// decoded batches, and the batch count ranks must agree on.
//
//   InputSpec spec;
//   RegisterDataOptions(schema, "data", &spec);     // before schema.Parse(...)
//   ...
//   spec.data.epochs = 1;                            // one pass; repeat after the step limit
//   int64_t local = CountLocalBatches(spec, rank, world);
//   int64_t agreed = comm.AllReduceMin(local);       // in the app: io never includes comm
//   auto report = std::make_shared<StepLimitReport>();
//   Dataset train = LimitSteps(BuildInputPipeline(spec, rank, world), agreed, report)
//                       .Repeat(epochs);
//
// Batches: one tensor per feature named by the feature, [B, per-example shape...]: with
// `features = image_raw:bytes:uint8:28x28x1, label:int64:int64:scalar` a batch holds
// "image_raw" uint8 [B,28,28,1] and "label" int64 [B] (shape "1" gives [B,1]). The last batch
// of a pass has fewer rows unless drop_remainder. Augmentations run on `image_feature` per
// example, after decode and before batching (their output shape is what gets batched).
// Decode and batch are fused (map_and_batch.cpp): each worker parses an Example into a
// per-example tensor that the batch stage copies into its row.
// parallel_reads = auto means one read thread (the consumer's) interleaving cycle_length files
// (auto: kDefaultCycleLength, never the cores or parallel_reads, so the element order depends
// on the seed, the config and the rank count only); read-ahead threads pay a hand-off per
// record, worth it only when reads wait on a network or disk (set parallel_reads > 1 then).
// Thread-safety: the functions are reentrant; the spec must not change while they run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "io/pipeline/assemble.hpp"
#include "io/pipeline/data_options.hpp"
#include "io/pipeline/dataset.hpp"
#include "io/pipeline/sources/csv_options.hpp"
#include "io/pipeline/sources/format_options.hpp"
#include "io/pipeline/text_input.hpp"

namespace shardflow::pipeline {

// Files interleaved when data.cycle_length is auto.
inline constexpr int kDefaultCycleLength = 4;

struct InputSpec {
  DataOptions data;
  // Feature specs (feature_spec.hpp): name:kind:dtype:shape[:default] for tfrecord,
  // name:dtype:shape for hdf5 (datasets) and csv (columns); optional for idx.
  std::vector<std::string> features;
  // TFRecord: "auto" (by suffix .gz/.zlib), "none", "gzip", "zlib".
  std::string compression = "auto";
  // TFRecord damaged records: "fail" (error naming file, offset, record) or "skip" (logged).
  std::string on_corrupt = "fail";
  // Keys of format = text | jsonl | fixed | images (sources/format_options.hpp: keys, batch
  // features, counting).
  FormatOptions format;
  // Keys of format = csv (sources/csv_options.hpp).
  CsvConfig csv;
  // Features concatenated into one float32 model input (assemble.hpp).
  AssembleConfig assemble;
  // A document feature tokenized in the pipeline, its batches padded or bucketed by length
  // (text_input.hpp).
  TextInputOptions text;
  // Section the spec was registered under, for error messages ("data", "eval").
  std::string section = "data";
  // Set by the app, not a config key: run on every decoded example before the augmentations
  // (e.g. labels within the model's classes); an Error it throws names the example's file and
  // record when its context does (Provenance::Context()).
  MapFn check_example;
  // Set by the app, not a config key: the features the consumer reads (e.g. the model's input
  // and label). When set, every other decoded feature is dropped before batching (a CSV column
  // or TFRecord feature nothing reads, such as a string of varying length, never reaches the
  // batch), except those the augmentations read (image_feature, one_hot's KEY) and the
  // pipeline's own (kRowIdFeature). Empty: every feature is batched.
  std::vector<std::string> keep_features;
};

// Registers every key of `section` ("data", or e.g. "eval" for a second input) bound to *spec,
// with descriptions, defaults and checks; integer keys that take "auto" are resolved into
// spec->data by an OnResolved hook. REQUIRES: spec outlives schema.Parse.
void RegisterDataOptions(ConfigSchema& schema, const std::string& section, InputSpec* spec);

// The usage check before any rank reads, once in the apps' parse phase: the spec's file
// patterns match a file (CheckFilesMatch; the error names `given_as`, "data.files" or
// "--input"). Format images reads `root` or `list`, not files: nothing is checked here (the
// source names a missing root or list file itself).
void CheckInputFilesMatch(const InputSpec& spec, const std::string& given_as);

// This rank's pipeline: list files (seeded order), plan shards for (rank, world), read
// (parallel_reads), cache, shuffle-and-repeat (epochs), decode by schema fused with batching
// (parallel_calls), augment, prefetch. Elements are batches. Throws Error naming the key for
// bad options, the file for missing files or a glob matching nothing; errors while iterating
// name the file, record and stage. REQUIRES: 0 <= rank < world.
Dataset BuildInputPipeline(const InputSpec& spec, int rank, int world);

// The assembled input's layout (assemble.hpp LayoutText) and width; "" / 0 when the spec
// assembles nothing. Reads the statistics file.
std::string AssembledLayout(const InputSpec& spec);
int64_t AssembledWidth(const InputSpec& spec);

// Batches this rank's pipeline yields in one pass (epochs ignored), computed from record
// offsets without decoding (TFRecord: a header scan, cached per file; row formats: from
// shapes). Assumes undamaged files (skipped records make the pipeline yield fewer). Take the
// MIN over ranks and pass it to LimitSteps (step_count.hpp). A bucketed text input
// (text_input.hpp) is counted by tokenizing this rank's records once.
int64_t CountLocalBatches(const InputSpec& spec, int rank, int world);
// Records this rank reads in one pass (before batching).
int64_t CountLocalRecords(const InputSpec& spec, int rank, int world);
// CountLocalBatches for a training input, where every rank needs at least one batch: throws
// Error(kInvalidArgument) when this rank has none, naming its shard's files and their record
// counts under the shard policy, and the fix (shard_policy = record or auto, a smaller batch,
// fewer ranks).
int64_t CountLocalTrainingBatches(const InputSpec& spec, int rank, int world);

// The global index of a record the pipeline of `spec` reads, from its provenance: files in
// the pipeline's listed order, then records in file order, from 0 (what shardflow-predict
// writes for records without an id feature). From the formats' record indexes (TFRecord: the
// header scan counting does; hdf5, idx: row counts); an empty function for formats without
// one (csv, text, jsonl, fixed, images), whose element ids stay. The function throws
// Error(kInternal) for a provenance outside the files.
std::function<int64_t(const Provenance&)> MakeRecordNumbering(const InputSpec& spec);

// The element id (MakeElementId(file, offset)) of every record of `spec`'s files, files in
// the pipeline's listed order, records in file order: what a pipeline reading records by id
// (DataOptions::only_records, record_provider) may be given. Throws Error(kInvalidArgument)
// naming data.format for a format without byte ranges and a record index (only tfrecord has
// both).
std::vector<int64_t> AllRecordIds(const InputSpec& spec);

}  // namespace shardflow::pipeline
