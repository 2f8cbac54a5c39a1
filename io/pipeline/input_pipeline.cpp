#include "io/pipeline/input_pipeline.hpp"

#include <algorithm>
#include <memory>

#include "core/logging.hpp"
#include "io/pipeline/autotune.hpp"
#include "io/pipeline/feature_spec.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/pipeline/sources/open_source.hpp"
#include "io/pipeline/sources/record_index.hpp"

namespace shardflow::pipeline {
namespace {

// "auto" or an integer >= min.
bool ValidAuto(const std::string& text, int64_t min) {
  if (text == "auto") return true;
  try {
    size_t used = 0;
    const int64_t v = std::stoll(text, &used);
    return used == text.size() && v >= min;
  } catch (...) {
    return false;
  }
}

int64_t ResolveAuto(const std::string& text) {
  return text == "auto" ? kAutotune : std::stoll(text);
}

struct AutoKeys {
  std::string parallel_reads = "auto", cycle_length = "auto", parallel_calls = "auto",
              prefetch = "auto";
};

SourceOptions SourceOptionsFor(const InputSpec& spec) {
  SourceOptions o;
  o.compression = io::ParseCompression(spec.compression);
  o.on_corrupt = io::ParseOnCorrupt(spec.on_corrupt);
  o.features = spec.features;
  if (spec.data.check_finite) o.finite_features = FloatFeatureNames(spec.features);
  if (spec.data.format == "csv") {
    o.csv = MakeCsvSourceOptions(spec.csv, spec.features, o.compression, spec.section);
  }
  if (IsExtraFormat(spec.data.format)) {
    const FormatOptions& f = spec.format;
    const std::string& sec = spec.section;
    o.header_lines = f.header_lines;
    if (!f.json_schema.empty())
      o.json_schema = ParseJsonSchema(f.json_schema, sec + ".json_schema");
    o.on_error = ParseOnError(f.on_error, sec + ".on_error");
    o.fixed = {.record_bytes = f.record_bytes,
               .header_bytes = f.header_bytes,
               .footer_bytes = f.footer_bytes,
               .tail = ParseOnError(f.tail, sec + ".tail"),
               .tail_key = sec + ".tail"};
    o.images.root = f.root;
    o.images.list_file = f.list;
    o.images.channels = static_cast<int>(f.channels);
    o.images.on_error = o.on_error;
  }
  return o;
}

// The features BuildInputPipeline keeps when the app names what it reads
// (InputSpec::keep_features): those, the augmentations' and the pipeline's own.
std::vector<std::string> KeptFeatures(const InputSpec& spec) {
  std::vector<std::string> keep = spec.keep_features;
  keep.push_back(kRowIdFeature);
  if (spec.text.enabled()) keep.insert(keep.end(), {kTokensFeature, kLengthFeature});
  if (!spec.data.augmentations.empty()) keep.push_back(spec.data.image_feature);
  for (const std::string& a : spec.data.augmentations) {
    if (a.rfind("one_hot:", 0) == 0) keep.push_back(a.substr(8, a.find(':', 8) - 8));
  }
  return keep;
}

// `decode`, then every feature not in `keep` dropped.
MapFn KeepOnly(MapFn decode, std::vector<std::string> keep) {
  return [decode = std::move(decode), keep = std::move(keep)](Element& e, const MapContext& ctx) {
    if (decode) decode(e, ctx);
    std::erase_if(e.features, [&](const auto& f) {
      return std::find(keep.begin(), keep.end(), f.first) == keep.end();
    });
  };
}

// The channels the image decode asks for when it is fused into the first augmentation
// (FusesDecodeAndCrop; the crop op then decodes JPEG bytes itself), or -1 when it is not:
// tfrecord with image_feature an image feature (its spec's C), images with image_feature
// "image" (data.channels). Not fused: an assembler (it reads decoded features). A corrupt
// image under skip (images' on_error, tfrecord's on_corrupt) is dropped by the fused map and
// batch (DataOptions::skip_corrupt_elements).
int FusedDecodeChannels(const InputSpec& spec, bool assembled) {
  if (!FusesDecodeAndCrop(spec.data) || assembled) return -1;
  if (spec.data.format == "images") {
    return spec.data.image_feature == "image" ? static_cast<int>(spec.format.channels) : -1;
  }
  if (spec.data.format != "tfrecord") return -1;
  const std::vector<std::string> images = ImageFeatureNames(spec.features);
  if (std::find(images.begin(), images.end(), spec.data.image_feature) == images.end()) return -1;
  for (const auto& f : ParseFeatureSpecs(spec.features, spec.section + ".features").features) {
    if (f.name == spec.data.image_feature) return static_cast<int>(f.shape[2]);
  }
  return -1;
}

void CheckSpec(const InputSpec& spec) {
  CheckFormatOptions(spec.data.format, spec.format, spec.section);
  if (spec.data.files.empty() && spec.data.format != "images") {
    throw Error(ErrorCode::kInvalidArgument, "no input files given",
                {.key = spec.section + ".files", .hint = "a comma-separated list of globs"});
  }
  if (spec.data.format == "tfrecord" && spec.features.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "format tfrecord needs the Example features",
                {.key = spec.section + ".features",
                 .hint = "e.g. image_raw:bytes:uint8:28x28x1, label:int64:int64:scalar"});
  }
  // An image of any size must be brought to one before batching.
  for (const auto& f : ParseFeatureSpecs(spec.features, spec.section + ".features").features) {
    if (!io::HasAnySize(f.shape)) continue;
    if (IsAnyLengthBytes(f)) {
      if (spec.text.enabled() && DocumentFeature(spec.text, spec.data.format) == f.name) continue;
      throw Error(ErrorCode::kInvalidArgument,
                  "bytes feature '" + f.name + "' has any length: a batch needs one",
                  {.key = spec.section + ".tokenizer",
                   .hint = "tokenize it: set " + spec.section + ".tokenizer and " + spec.section +
                           ".text_feature = " + f.name});
    }
    const bool sized = f.name == spec.data.image_feature && SizesImages(spec.data.augmentations);
    if (!sized) {
      throw Error(ErrorCode::kInvalidArgument,
                  "image feature '" + f.name + "' has any size (" + io::SpecShapeText(f.shape) +
                      "): a batch needs one size",
                  {.key = spec.section + ".augmentations",
                   .hint = "set " + spec.section + ".image_feature = " + f.name + " and start " +
                           spec.section +
                           ".augmentations with random_resized_crop:HxW, center_crop:HxW or "
                           "resize:HxW"});
    }
  }
}

}  // namespace

void RegisterDataOptions(ConfigSchema& s, const std::string& section, InputSpec* spec) {
  DataOptions& d = spec->data;
  spec->section = section;
  auto autos = std::make_shared<AutoKeys>();
  const std::string& sec = section;
  s.DescribeSection(sec, "input pipeline: files, format, sharding, shuffle, decode, batching");
  auto files =
      s.Add(sec, "files", &d.files, "glob patterns of the input files (sorted, deduplicated)");
  if (section == "data") {
    files.Check(
        [spec](const std::vector<std::string>& v) {
          return !v.empty() || spec->data.format == "images";
        },
        "must not be empty (except for format images)");
  }
  s.AddChoice(sec, "format", &d.format,
              {"tfrecord", "hdf5", "idx", "csv", "text", "jsonl", "fixed", "images"},
              "record format of the files; the keys that act for one format only say which "
              "(e.g. 'fixed: bytes per record')");
  RegisterFormatOptions(s, sec, &spec->format);
  RegisterCsvOptions(s, sec, &spec->csv);
  RegisterAssembleOptions(s, sec, &spec->assemble);
  RegisterTextOptions(s, sec, &spec->text);
  s.AddChoice(sec, "compression", &spec->compression, {"auto", "none", "gzip", "zlib"},
              "TFRecord compression; auto picks by suffix (.gz, .zlib)");
  s.AddChoice(sec, "on_corrupt", &spec->on_corrupt, {"fail", "skip"},
              "damaged TFRecord records, and records whose decode fails on damaged data (a "
              "corrupt or truncated JPEG or PNG): fail (error naming file and record) or skip "
              "(logged and counted; a batch missing a skipped record has a row fewer)");
  s.Add(sec, "check_finite", &d.check_finite,
        "a NaN/Inf in a float feature is a bad record (on_corrupt: fail names file, record and "
        "feature; skip drops and counts it); false lets it through");
  s.Add(sec, "features", &spec->features,
        "feature specs name:kind:dtype:shape[:default] (tfrecord; kind bytes|int64|float) or "
        "name:dtype:shape (hdf5 datasets, csv columns), e.g. image_raw:bytes:uint8:28x28x1")
      .Check(
          [](const std::vector<std::string>& v) {
            try {
              ParseFeatureSpecs(v);
              return true;
            } catch (const Error&) {
              return false;
            }
          },
          "must be valid feature specs (name:kind:dtype:shape[:default])");
  s.AddChoice(sec, "shard_policy", &d.shard_policy,
              {{"auto", ShardPolicy::kAuto},
               {"file", ShardPolicy::kFile},
               {"record", ShardPolicy::kRecord},
               {"byte_range", ShardPolicy::kByteRange}},
              "how ranks split the data: file (whole files per rank), record (every rank reads "
              "every file, keeps every Nth record), byte_range (each file cut in N byte ranges), "
              "auto (file when the files balance over the ranks, else byte_range or record)");
  s.Add(sec, "shuffle_files", &d.shuffle_files, "list files in a seeded random order");
  s.Add(sec, "shuffle_buffer", &d.shuffle_buffer, "shuffle window in elements (0: no shuffle)")
      .NonNegative();
  s.Add(sec, "shuffle_buffer_bytes", &d.shuffle_buffer_bytes, "byte bound of the shuffle window")
      .Positive();
  auto auto_key = [&](const char* key, std::string* target, int64_t min, const char* what) {
    s.Add(sec, key, target, what)
        .Check([min](const std::string& v) { return ValidAuto(v, min); },
               "must be auto or an integer >= " + std::to_string(min));
  };
  auto_key("parallel_reads", &autos->parallel_reads, 1,
           "read-ahead threads, one per open file when > 1 (auto: 1, the consumer reads)");
  auto_key("cycle_length", &autos->cycle_length, 1,
           "files interleaved, which fixes the element order (auto: 4, whatever parallel_reads, "
           "the cores or the binding)");
  auto_key("parallel_calls", &autos->parallel_calls, 0,
           "decode/augment threads of the fused map-and-batch (0: consumer thread; auto: cores)");
  auto_key("prefetch", &autos->prefetch, 0, "batches prefetched (0: none; auto: tuned)");
  s.Add(sec, "cache", &d.cache, "'' none, 'memory', or a cache file path");
  s.Add(sec, "deterministic", &d.deterministic,
        "same element order for any thread count (false: fast elements overtake)");
  s.Add(sec, "seed", &d.seed, "seed of file order, shuffle and random augmentations");
  s.Add(sec, "augmentations", &d.augmentations,
        "after decode, in order: random_flip, random_crop:HxW, "
        "random_resized_crop:HxW[:SMIN,SMAX[:RMIN,RMAX]] (defaults 0.08,1:0.75,1.3333), "
        "center_crop:HxW[:FRACTION] (default 0.875), resize:HxW, scale:F, normalize:M/S, "
        "one_hot:KEY:DEPTH")
      .Check(
          [](const std::vector<std::string>& v) {
            try {
              for (const auto& a : JoinAugmentationArgs(v)) ParseAugmentation(a, "image", 0);
              return true;
            } catch (const Error&) {
              return false;
            }
          },
          "must be known augmentations with valid arguments");
  s.Add(sec, "image_feature", &d.image_feature, "feature the augmentations apply to");
  s.Add(sec, "fuse_decode_crop", &d.fuse_decode_crop,
        "a first augmentation random_resized_crop or center_crop decodes only its window of a "
        "JPEG (DCT-downscaled when >= 2x the output); false: decode whole images, then crop");
  s.Add(sec, "batch_size", &d.batch_size, "examples per batch on each rank").Positive();
  s.Add(sec, "drop_remainder", &d.drop_remainder, "drop a last batch smaller than batch_size");
  s.Add(sec, "epochs", &d.epochs, "passes over the data (-1: forever)")
      .Check([](const int64_t& v) { return v >= 1 || v == -1; }, "must be >= 1 or -1");
  s.OnResolved([autos, spec] {
    spec->format.raw_lines = spec->text.enabled();
    CheckFormatOptions(spec->data.format, spec->format, spec->section);
    CheckTextOptions(spec->text, spec->data.format, spec->section);
    spec->data.augmentations = JoinAugmentationArgs(spec->data.augmentations);
    spec->data.parallel_reads = static_cast<int>(ResolveAuto(autos->parallel_reads));
    spec->data.cycle_length = static_cast<int>(ResolveAuto(autos->cycle_length));
    spec->data.parallel_calls = static_cast<int>(ResolveAuto(autos->parallel_calls));
    spec->data.prefetch = ResolveAuto(autos->prefetch);
  });
}

namespace {

// Decode (by format or feature specs), tokenize, assemble, check, keep: each record's map step.
MapFn MakeDecode(const InputSpec& spec, int fused, std::shared_ptr<const text::Tokenizer> tokenizer,
                 std::shared_ptr<TokenizeCounts> counts) {
  const auto assembler = MakeAssembler(spec.assemble, spec.features, spec.section);
  MapFn decode;
  if (IsExtraFormat(spec.data.format)) {
    decode = MakeFormatDecoder(spec.data.format, spec.format);
  } else if (!spec.features.empty() && !(spec.data.format == "csv" && !spec.csv.columns.empty())) {
    // (csv_columns, when set, are the CSV columns: `features` then describes another format
    // of the same data, e.g. the converted shards, and is not applied to CSV rows.)
    io::Schema schema = ParseFeatureSpecs(spec.features, spec.section + ".features");
    std::vector<std::string> encoded;
    if (fused >= 0) encoded.push_back(spec.data.image_feature);
    decode = spec.data.format == "tfrecord"
                 ? MakeExampleDecoder(std::move(schema), ImageFeatureNames(spec.features), "record",
                                      12, std::move(encoded))
                 : MakeTensorSelector(std::move(schema));
  }
  std::vector<MapFn> steps;
  if (decode) steps.push_back(std::move(decode));
  if (tokenizer) {
    steps.push_back(MakeTextStep(spec.text, spec.data.format, spec.section, std::move(tokenizer),
                                 std::move(counts)));
  }
  if (assembler) {
    steps.push_back([assembler](Element& e, const MapContext&) { assembler->Apply(e); });
  }
  if (spec.check_example) steps.push_back(spec.check_example);
  if (!spec.keep_features.empty()) steps.push_back(KeepOnly({}, KeptFeatures(spec)));
  if (steps.empty()) return {};
  if (steps.size() == 1) return steps.front();
  return [steps = std::move(steps)](Element& e, const MapContext& ctx) {
    for (const MapFn& step : steps) step(e, ctx);
  };
}

}  // namespace

Dataset BuildInputPipeline(const InputSpec& given, int rank, int world) {
  InputSpec spec = given;
  spec.format.raw_lines = spec.text.enabled();
  CheckSpec(spec);
  const bool assembled = MakeAssembler(spec.assemble, spec.features, spec.section) != nullptr;
  const int fused = FusedDecodeChannels(spec, assembled);
  std::shared_ptr<const text::Tokenizer> tokenizer;
  if (spec.text.enabled()) tokenizer = MakeInputTokenizer(spec.text, spec.section);
  MapFn decode = MakeDecode(spec, fused, tokenizer, nullptr);
  DataOptions data = spec.data;
  data.decode_channels = std::max(fused, 0);
  SourceOptions sources = SourceOptionsFor(spec);
  sources.images.keep_jpeg = fused >= 0;
  data.files = FormatFiles(data.format, spec.format, data.files);
  if (tokenizer && spec.text.packed()) {
    data.packing = std::make_shared<const PackOptions>(TextPacking(spec.text, *tokenizer));
  } else if (tokenizer && spec.text.bucketed()) {
    data.buckets = std::make_shared<const BucketOptions>(
        TextBuckets(spec.text, *tokenizer, spec.data.drop_remainder));
  } else if (tokenizer && (spec.text.pad_to != "max" || spec.text.mask)) {
    data.padded_batch =
        std::make_shared<const PaddedBatchOptions>(TextPadding(spec.text, *tokenizer));
  }
  // The element order depends on the seed, the config and the rank count only: the cycle
  // length (files interleaved) is fixed here, never taken from parallel_reads, the cores or the
  // binding (a resume on a node that binds differently restores the same iterator state).
  if (data.cycle_length == kAutotune) data.cycle_length = kDefaultCycleLength;
  data.cache_refill_damaged = spec.on_corrupt == "skip";
  data.skip_corrupt_elements =
      spec.on_corrupt == "skip" || (spec.data.format == "images" && spec.format.on_error == "skip");
  if (data.parallel_reads == kAutotune) {
    // auto: interleave the cycle on the consumer's thread. A read-ahead thread per file costs
    // a hand-off per record, which dominates for small page-cached records (bench tfdata,
    // 784-byte records, 2 cores: 362k records/s with 1 read thread, 129k with 2); ask for
    // parallel_reads > 1 where reads wait on the network or disk.
    data.parallel_reads = 1;
  }
  BuiltPipeline built =
      BuildPipeline(data, WithLabelMap(MakeSourceFactory(sources), data.format, spec.format, rank),
                    std::move(decode), rank, world);
  if (fused >= 0) built.description += ", decode fused into " + data.augmentations.front();
  if (tokenizer) built.description += ", tokenizer " + tokenizer->Describe();
  // Once per section: evaluation rebuilds its pipeline every epoch, alike.
  if (FirstTimeInProcess("pipeline [" + spec.section + "] " + built.description)) {
    SF_LOG0(Info) << "[" << spec.section << "] " << built.description;
  }
  return built.dataset;
}

std::string AssembledLayout(const InputSpec& spec) {
  const auto assembler = MakeAssembler(spec.assemble, spec.features, spec.section);
  return assembler ? assembler->LayoutText() : std::string();
}

int64_t AssembledWidth(const InputSpec& spec) {
  const auto assembler = MakeAssembler(spec.assemble, spec.features, spec.section);
  return assembler ? assembler->width() : 0;
}

void CheckInputFilesMatch(const InputSpec& spec, const std::string& given_as) {
  if (spec.data.format != "images") CheckFilesMatch(spec.data.files, given_as);
}

namespace {

// The record source of every file the spec names, in the pipeline's file order.
std::shared_ptr<const RecordSource> OpenSpecSource(const InputSpec& spec) {
  const std::vector<std::string> files =
      ListFiles(FormatFiles(spec.data.format, spec.format, spec.data.files),
                spec.data.shuffle_files, spec.data.seed);
  SourceOptions options = SourceOptionsFor(spec);
  // Read as the pipeline reads (BuildInputPipeline): a JPEG whose decode is fused into the
  // crop has its header checked, not decoded (counting an image folder reads every file).
  const bool assembled = MakeAssembler(spec.assemble, spec.features, spec.section) != nullptr;
  options.images.keep_jpeg = FusedDecodeChannels(spec, assembled) >= 0;
  return OpenRecordSource(spec.data.format, files, options);
}

}  // namespace

int64_t CountLocalRecords(const InputSpec& spec, int rank, int world) {
  CheckSpec(spec);
  const auto source = OpenSpecSource(spec);
  const ShardPlan plan =
      PlanSourceShards(*source, spec.data.shard_policy, world, rank, spec.data.shard_weights);
  return CountPlannedRecords(*source, plan);
}

std::function<int64_t(const Provenance&)> MakeRecordNumbering(const InputSpec& spec) {
  CheckSpec(spec);
  const auto source = OpenSpecSource(spec);
  const auto* index = dynamic_cast<const RecordIndex*>(source.get());
  // Without a record index the files would have to be read twice (and their bad records
  // reported twice): the pipeline's element ids stay.
  if (index == nullptr) return {};
  auto offsets = std::make_shared<std::vector<std::vector<uint64_t>>>(source->Files().size());
  auto first = std::make_shared<std::vector<int64_t>>(offsets->size() + 1, 0);
  for (size_t f = 0; f < offsets->size(); ++f) {
    std::vector<uint64_t>& mine = (*offsets)[f];
    mine = index->RecordOffsets(f);
    (*first)[f + 1] = (*first)[f] + static_cast<int64_t>(mine.size());
  }
  return [offsets, first](const Provenance& where) {
    const auto f = static_cast<size_t>(where.file_index);
    if (where.file_index < 0 || f >= offsets->size()) {
      throw Error(ErrorCode::kInternal, "record of file " + std::to_string(where.file_index) +
                                            " outside the input's " +
                                            std::to_string(offsets->size()) + " files");
    }
    const std::vector<uint64_t>& in = (*offsets)[f];
    const auto it = std::lower_bound(in.begin(), in.end(), where.offset);
    if (it == in.end() || *it != where.offset) {
      throw Error(ErrorCode::kInternal,
                  "no record starts at offset " + std::to_string(where.offset), where.Context());
    }
    return (*first)[f] + (it - in.begin());
  };
}

std::vector<int64_t> AllRecordIds(const InputSpec& spec) {
  CheckSpec(spec);
  const auto source = OpenSpecSource(spec);
  const auto* index = dynamic_cast<const RecordIndex*>(source.get());
  if (index == nullptr || !source->SupportsByteRanges()) {
    throw Error(ErrorCode::kInvalidArgument,
                "reading records by id needs a format with byte ranges and a record index "
                "(tfrecord), not " +
                    source->FormatDescription(),
                {.key = spec.section + ".format"});
  }
  std::vector<int64_t> ids;
  for (size_t f = 0; f < source->Files().size(); ++f) {
    for (const uint64_t offset : index->RecordOffsets(f)) {
      ids.push_back(MakeElementId(static_cast<int64_t>(f), offset));
    }
  }
  return ids;
}

namespace {

// A bucketed or packed text input's batches in one pass: this rank's records tokenized once (in
// file order: the count per bucket, and the stream's length, do not depend on the order).
int64_t CountTokenizedBatches(const InputSpec& given, int rank, int world) {
  InputSpec spec = given;
  spec.format.raw_lines = true;
  CheckSpec(spec);
  const auto tokenizer = MakeInputTokenizer(spec.text, spec.section);
  auto counts = std::make_shared<TokenizeCounts>();
  const auto source = OpenSpecSource(spec);
  const ShardPlan plan =
      PlanSourceShards(*source, spec.data.shard_policy, world, rank, spec.data.shard_weights);
  Dataset ds = Dataset::FromRecordSource(source, plan)
                   .Map(MakeDecode(spec, -1, tokenizer, counts), {.name = "tokenize"});
  const BucketOptions buckets = spec.text.bucketed()
                                    ? TextBuckets(spec.text, *tokenizer, spec.data.drop_remainder)
                                    : BucketOptions{};
  std::vector<int64_t> per(buckets.batch_sizes.size(), 0);
  PipelineIterator it = ds.MakeIterator({.autotune = false});
  Element e;
  int64_t stream = 0;  // packed: the documents' tokens and end ids
  while (it.Next(&e)) {
    const int64_t n = *e.Get(kLengthFeature).data<int64_t>();
    if (spec.text.packed()) {
      stream += n + 1;
    } else {
      ++per[static_cast<size_t>(BucketOf(buckets.boundaries, n))];
    }
  }
  int64_t batches = 0;
  std::string made;
  if (spec.text.packed()) {
    const int64_t blocks = PackedBlocksOf(stream, spec.text.pack);
    const int64_t b = spec.data.batch_size;
    batches = spec.data.drop_remainder ? blocks / b : (blocks + b - 1) / b;
    made = std::to_string(blocks) + " blocks of " + std::to_string(spec.text.pack);
  } else {
    batches = BucketedBatches(buckets, per);
    for (const int64_t n : per) {
      made.append(made.empty() ? "buckets " : "/").append(std::to_string(n));
    }
  }
  std::string cut;
  if (spec.text.max_tokens > 0) {
    cut = std::to_string(counts->truncated.load()) +
          " cut to max_tokens = " + std::to_string(spec.text.max_tokens) + ", ";
  }
  SF_LOG(Info) << "[" << spec.section << "] rank " << rank << ": " << counts->documents.load()
               << " documents, " << counts->tokens.load() << " tokens (" << cut
               << counts->unknown_words.load() << " words out of vocabulary, "
               << counts->empty.load() << " empty); " << made << " -> " << batches << " batches";
  return batches;
}

}  // namespace

int64_t CountLocalBatches(const InputSpec& spec, int rank, int world) {
  if (spec.text.counted_by_tokens()) return CountTokenizedBatches(spec, rank, world);
  if (spec.data.batch_size < 1) {
    throw Error(ErrorCode::kInvalidArgument, "batch_size must be >= 1",
                {.key = spec.section + ".batch_size"});
  }
  const int64_t n = CountLocalRecords(spec, rank, world);
  const int64_t b = spec.data.batch_size;
  return spec.data.drop_remainder ? n / b : (n + b - 1) / b;
}

int64_t CountLocalTrainingBatches(const InputSpec& spec, int rank, int world) {
  const int64_t batches = CountLocalBatches(spec, rank, world);
  if (batches > 0) return batches;
  const auto source = OpenSpecSource(spec);
  const ShardPlan plan =
      PlanSourceShards(*source, spec.data.shard_policy, world, rank, spec.data.shard_weights);
  // This rank's files and the records it reads from each.
  std::string parts;
  int64_t records = 0;
  for (const ShardUnit& unit : plan.units) {
    ShardPlan one = plan;
    one.units = {unit};
    const int64_t n = CountPlannedRecords(*source, one);
    records += n;
    if (!parts.empty()) parts += ", ";
    if (parts.size() > 400) {
      parts += "...";
      break;
    }
    parts += source->Files()[unit.file_index].name + " (" + std::to_string(n) + " records)";
  }
  const std::string policy = ShardPolicyName(plan.policy);
  throw Error(
      ErrorCode::kInvalidArgument,
      "rank " + std::to_string(rank) + " has no training batch: shard_policy = " + policy +
          " gives it " +
          (parts.empty() ? std::string("no file (") + std::to_string(source->Files().size()) +
                               " files for " + std::to_string(world) + " ranks)"
                         : parts) +
          ", " + std::to_string(records) + " records, fewer than one batch of " +
          std::to_string(spec.data.batch_size),
      {.key = spec.section + ".shard_policy",
       .hint = plan.policy == ShardPolicy::kRecord
                   ? "lower the batch size or use fewer ranks"
                   : "shard_policy = record (or auto) splits the records evenly over the ranks; "
                     "or lower the batch size or use fewer ranks"});
}

}  // namespace shardflow::pipeline
