#include "io/pipeline/data_options.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "io/pipeline/autotune.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/pipeline/ops/image_augment.hpp"
#include "io/pipeline/ops/resized_crop.hpp"
#include "io/pipeline/ops/tensor_ops.hpp"
#include "io/pipeline/sources/record_index.hpp"
#include "io/pipeline/sources/source_counters.hpp"

namespace shardflow::pipeline {
namespace {

[[noreturn]] void Bad(const std::string& key, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message, {.key = key});
}

int64_t ParseInt(const std::string& text, const std::string& spec) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != text.size()) Bad("augmentations", "bad number in '" + spec + "'");
  return v;
}

// Comma-separated numbers, parsed as T (std::stof for float: out of range is an error).
template <typename T>
std::vector<T> ParseNumbers(const std::string& text, const std::string& spec) {
  std::vector<T> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      if constexpr (std::is_same_v<T, float>) {
        out.push_back(std::stof(item, &used));
      } else {
        out.push_back(std::stod(item, &used));
      }
      if (used != item.size()) throw 0;
    } catch (...) {
      Bad("augmentations", "bad number '" + item + "' in '" + spec + "'");
    }
  }
  return out;
}

std::vector<float> ParseFloats(const std::string& text, const std::string& spec) {
  return ParseNumbers<float>(text, spec);
}

std::vector<double> ParseDoubles(const std::string& text, const std::string& spec) {
  return ParseNumbers<double>(text, spec);
}

std::pair<int64_t, int64_t> ParseSize(const std::string& text, const std::string& spec) {
  const size_t x = text.find('x');
  if (x == std::string::npos) Bad("augmentations", "expected HxW in '" + spec + "'");
  return {ParseInt(text.substr(0, x), spec), ParseInt(text.substr(x + 1), spec)};
}

std::vector<std::string> SplitColons(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ':')) out.push_back(item);
  if (!text.empty() && text.back() == ':') out.push_back("");
  return out;
}

// A pair "LO,HI" with 0 < LO <= HI (<= max when max > 0).
std::pair<double, double> ParseRange(const std::string& text, const std::string& spec,
                                     const char* what, double max) {
  const std::vector<double> v = ParseDoubles(text, spec);
  if (v.size() != 2 || !(v[0] > 0 && v[0] <= v[1] && (max <= 0 || v[1] <= max))) {
    Bad("augmentations", std::string(what) + " must be LO,HI with 0 < LO <= HI" +
                             (max > 0 ? " <= 1" : "") + ": '" + spec + "'");
  }
  return {v[0], v[1]};
}

// random_resized_crop:HxW[:SMIN,SMAX[:RMIN,RMAX]] and center_crop:HxW[:FRACTION].
MapFn ParseCrop(const std::string& name, const std::string& arg, const std::string& spec,
                const std::string& feature, uint64_t seed, int channels) {
  const std::vector<std::string> parts = SplitColons(arg);
  const size_t most = name == "center_crop" ? 2 : 3;
  if (parts.empty() || parts.size() > most) {
    Bad("augmentations",
        name == "center_crop"
            ? "expected center_crop:HxW[:FRACTION]: '" + spec + "'"
            : "expected random_resized_crop:HxW[:SMIN,SMAX[:RMIN,RMAX]]: '" + spec + "'");
  }
  auto [h, w] = ParseSize(parts[0], spec);
  if (h < 1 || w < 1) Bad("augmentations", "crop size must be >= 1: '" + spec + "'");
  if (name == "center_crop") {
    double fraction = 0.875;
    if (parts.size() == 2) {
      const auto f = ParseDoubles(parts[1], spec);
      if (f.size() != 1 || !(f[0] > 0 && f[0] <= 1)) {
        Bad("augmentations", "center_crop FRACTION must be one number in (0, 1]: '" + spec + "'");
      }
      fraction = f[0];
    }
    return CenterCrop(feature, h, w, fraction, channels);
  }
  ResizedCropRange range;
  if (parts.size() >= 2) {
    std::tie(range.min_scale, range.max_scale) = ParseRange(parts[1], spec, "scale", 1.0);
  }
  if (parts.size() == 3) {
    std::tie(range.min_ratio, range.max_ratio) = ParseRange(parts[2], spec, "ratio", 0.0);
  }
  return RandomResizedCrop(feature, h, w, range, seed, channels);
}

}  // namespace

bool FusesDecodeAndCrop(const DataOptions& o) {
  if (!o.fuse_decode_crop || o.augmentations.empty()) return false;
  const std::string& first = o.augmentations.front();
  const std::string name = first.substr(0, first.find(':'));
  return name == "random_resized_crop" || name == "center_crop";
}

std::vector<std::string> JoinAugmentationArgs(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const std::string& item : items) {
    const size_t b = item.find_first_not_of(" \t");
    const bool continues = b != std::string::npos && !out.empty() &&
                           !std::isalpha(static_cast<unsigned char>(item[b]));
    if (continues) {
      out.back().append(1, ',').append(item, b, std::string::npos);
    } else {
      out.push_back(item);
    }
  }
  return out;
}

bool SizesImages(const std::vector<std::string>& augmentations) {
  return std::any_of(augmentations.begin(), augmentations.end(), [](const std::string& a) {
    const std::string name = a.substr(0, a.find(':'));
    return name == "random_crop" || name == "random_resized_crop" || name == "center_crop" ||
           name == "resize";
  });
}

std::vector<std::string> EvaluationAugmentations(const std::vector<std::string>& train) {
  std::vector<std::string> out;
  for (const std::string& a : train) {
    const size_t colon = a.find(':');
    const std::string name = a.substr(0, colon);
    if (name == "random_resized_crop") {
      const std::string arg = colon == std::string::npos ? "" : a.substr(colon + 1);
      out.push_back("center_crop:" + arg.substr(0, arg.find(':')));
    } else if (name.rfind("random_", 0) != 0) {
      out.push_back(a);
    }
  }
  return out;
}

MapFn ParseAugmentation(const std::string& spec, const std::string& feature, uint64_t seed,
                        int channels) {
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  const std::string arg = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (name == "random_flip") return RandomFlipLeftRight(feature, seed);
  if (name == "random_crop") {
    auto [h, w] = ParseSize(arg, spec);
    return RandomCrop(feature, h, w, seed);
  }
  if (name == "random_resized_crop" || name == "center_crop") {
    return ParseCrop(name, arg, spec, feature, seed, channels);
  }
  if (name == "resize") {
    auto [h, w] = ParseSize(arg, spec);
    return Resize(feature, h, w);
  }
  if (name == "scale") {
    const auto f = ParseFloats(arg, spec);
    if (f.size() != 1) Bad("augmentations", "scale takes one number: '" + spec + "'");
    return CastAndScale(feature, DType::kFloat32, f[0]);
  }
  if (name == "normalize") {
    const size_t slash = arg.find('/');
    if (slash == std::string::npos) Bad("augmentations", "expected MEANS/STDS in '" + spec + "'");
    return Normalize(feature, ParseFloats(arg.substr(0, slash), spec),
                     ParseFloats(arg.substr(slash + 1), spec));
  }
  if (name == "one_hot") {
    const size_t c2 = arg.find(':');
    if (c2 == std::string::npos) Bad("augmentations", "expected one_hot:KEY:DEPTH: '" + spec + "'");
    return OneHot(arg.substr(0, c2), ParseInt(arg.substr(c2 + 1), spec));
  }
  Bad("augmentations", "unknown augmentation '" + spec +
                           "' (random_flip, random_crop:HxW, "
                           "random_resized_crop:HxW[:SMIN,SMAX[:RMIN,RMAX]], "
                           "center_crop:HxW[:FRACTION], resize:HxW, scale:F, normalize:M/S, "
                           "one_hot:KEY:DEPTH)");
}

BuiltPipeline BuildPipeline(const DataOptions& o, const SourceFactory& factory, MapFn decode,
                            int rank, int num_ranks) {
  if (!factory) Bad("format", "no record source factory");
  if (o.batch_size < 1) Bad("batch_size", "batch_size must be >= 1");
  if (o.shuffle_buffer < 0) Bad("shuffle_buffer", "shuffle_buffer must be >= 0");
  if (o.parallel_reads < 1 && o.parallel_reads != kAutotune) {
    Bad("parallel_reads", "parallel_reads must be >= 1 or auto");
  }
  if (o.parallel_calls < 0 && o.parallel_calls != kAutotune) {
    Bad("parallel_calls", "parallel_calls must be >= 0 or auto");
  }
  if (o.prefetch < 0 && o.prefetch != kAutotune) Bad("prefetch", "prefetch must be >= 0 or auto");
  if (o.epochs == 0 || o.epochs < -1) Bad("epochs", "epochs must be >= 1 or -1 (forever)");

  const std::vector<std::string> files = ListFiles(o.files, o.shuffle_files, o.seed);
  std::shared_ptr<const RecordSource> source = factory(o.format, files);
  if (!source) Bad("format", "no reader for format '" + o.format + "'");
  const ShardPlan plan = o.record_provider ? RecordProviderPlan(*source, o.record_provider)
                         : o.only_records  ? RecordListPlan(*source, *o.only_records)
                                           : PlanSourceShards(*source, o.shard_policy, num_ranks,
                                                              rank, o.shard_weights);

  const int reads =
      o.parallel_reads == kAutotune ? std::min(4, DefaultCpuBudget()) : o.parallel_reads;
  if (o.cycle_length < 1 && o.cycle_length != kAutotune) {
    Bad("cycle_length", "cycle_length must be >= 1 or auto");
  }
  // Read in the given (or provided) order, once.
  const bool listed = o.only_records != nullptr || o.record_provider != nullptr;
  const int cycle = listed ? 1 : o.cycle_length == kAutotune ? reads : o.cycle_length;
  Dataset ds = Dataset::FromRecordSource(source, plan,
                                         {.cycle_length = cycle,
                                          .block_length = 1,
                                          .num_parallel_reads = listed ? 1 : reads,
                                          .deterministic = o.deterministic});
  if (listed) {
    // the caller's order, one pass
  } else if (o.cache == "memory") {
    ds = ds.Cache();
  } else if (!o.cache.empty()) {
    ds = ds.Cache(RankCacheFile(o.cache, rank, num_ranks), o.cache_refill_damaged);
  }
  if (listed) {
    if (o.epochs != 1) ds = ds.Repeat(o.epochs);
  } else if (o.shuffle_buffer > 0) {
    ds = ds.ShuffleAndRepeat({.buffer_elements = o.shuffle_buffer,
                              .buffer_bytes = o.shuffle_buffer_bytes,
                              .seed = o.seed},
                             o.epochs);
  } else if (o.epochs != 1) {
    ds = ds.Repeat(o.epochs);
  }
  std::vector<MapFn> steps;
  if (decode) steps.push_back(std::move(decode));
  for (const auto& spec : o.augmentations) {
    steps.push_back(ParseAugmentation(spec, o.image_feature, o.seed, o.decode_channels));
  }
  if (o.row_ids) {
    steps.push_back([](Element& e, const MapContext&) {
      Tensor id(DType::kInt64, {});
      *id.data<int64_t>() = e.id;
      e.Set(kRowIdFeature, std::move(id));
    });
  }
  MapFn all = [steps](Element& e, const MapContext& ctx) {
    for (const auto& step : steps) step(e, ctx);
  };
  const int calls = o.parallel_calls == kAutotune ? DefaultCpuBudget() : o.parallel_calls;
  if (o.buckets || o.padded_batch || o.packing) {
    ds = ds.Map(all,
                {.name = "decode", .num_parallel_calls = calls, .deterministic = o.deterministic});
    if (o.packing) {
      ds = ds.PackSequences(*o.packing).Batch(o.batch_size, o.drop_remainder);
    } else if (o.buckets) {
      ds = ds.BucketBySequenceLength(*o.buckets);
    } else {
      ds = ds.PaddedBatch(o.batch_size, o.drop_remainder, *o.padded_batch);
    }
  } else if (calls == 0 && !o.skip_corrupt_elements) {
    ds = ds.Map(all, {.name = "decode"}).Batch(o.batch_size, o.drop_remainder);
  } else {
    MapOptions map{.name = "decode",
                   .num_parallel_calls = std::max(calls, 1),
                   .deterministic = o.deterministic};
    if (o.skip_corrupt_elements) {
      auto counters = std::make_shared<SourceCounters>();
      map.on_data_loss = [counters](const Error& error) {
        // Known by file and record (the message of a fused decode differs from a whole one's).
        CountSkip(*counters, error.what(), RecordKey(error.context()));
      };
    }
    ds = ds.MapAndBatch(all, o.batch_size, o.drop_remainder, map);
  }
  if (o.prefetch != 0) ds = ds.Prefetch(o.prefetch);
  std::string description =
      std::string("shard_policy=") + ShardPolicyName(plan.policy) + " (" + plan.reason + "), " +
      std::to_string(files.size()) + " files, " + std::to_string(plan.units.size()) +
      " units on rank " + std::to_string(rank) + "/" + std::to_string(num_ranks) +
      ", reads=" + std::to_string(reads) + ", calls=" + std::to_string(calls) +
      (o.buckets ? std::string(", bucketed") : ", batch=" + std::to_string(o.batch_size));
  return BuiltPipeline{ds, plan, description};
}

}  // namespace shardflow::pipeline
