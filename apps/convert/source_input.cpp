#include "apps/convert/source_input.hpp"

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "apps/convert/shard_plan.hpp"
#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/progress.hpp"
#include "io/example.hpp"
#include "io/pipeline/fixed_length_source.hpp"
#include "io/pipeline/list_files.hpp"
#include "io/pipeline/sources/image_folder_source.hpp"
#include "io/pipeline/sources/json_lines_source.hpp"
#include "io/pipeline/sources/text_line_source.hpp"
#include "io/tfrecord_writer.hpp"

namespace shardflow::convert {
namespace {

namespace fs = std::filesystem;
using pipeline::Element;
using pipeline::RecordSource;

std::shared_ptr<const RecordSource> OpenSource(const ConvertOptions& o) {
  const pipeline::OnError on_error = pipeline::ParseOnError(o.on_error, "input.on_error");
  if (o.format == "images") {
    return pipeline::OpenImageFolderSource({.root = o.root,
                                            .list_file = o.list,
                                            .keep_encoded = o.image_bytes == "encoded",
                                            .on_error = on_error});
  }
  const std::vector<std::string> files = pipeline::ListFiles(o.files);
  if (o.format == "text") {
    return pipeline::OpenTextLineSource(files, {.header_lines = o.header_lines});
  }
  if (o.format == "fixed") {
    return pipeline::OpenFixedLengthSource(files,
                                           {.record_bytes = static_cast<uint64_t>(o.record_bytes),
                                            .header_bytes = static_cast<uint64_t>(o.header_bytes),
                                            .footer_bytes = static_cast<uint64_t>(o.footer_bytes),
                                            .tail = on_error,
                                            .tail_key = "input.on_error"});
  }
  const auto schema = pipeline::ParseJsonSchema(o.schema, "input.schema");
  return pipeline::OpenJsonLinesSource(
      files, {.schema = schema, .on_error = on_error, .header_lines = o.header_lines});
}

// Records of file f: known from the file size (fixed-length) or by reading it.
int64_t CountRecords(const RecordSource& source, size_t f, bool trust_known) {
  if (trust_known && source.Files()[f].num_records >= 0) return source.Files()[f].num_records;
  auto reader = source.Open(f, {});
  Element e;
  int64_t n = 0;
  while (reader->Next(&e)) ++n;
  return n;
}

std::string Bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), t.byte_size());
}

// "jpeg" or "png", from the file's first bytes (the source decoded it, so it is one of them).
std::string ImageFormatOf(const Tensor& encoded) {
  const auto* d = encoded.data<uint8_t>();
  return encoded.num_elements() >= 2 && d[0] == 0xFF && d[1] == 0xD8 ? "jpeg" : "png";
}

// The image features (see the header): the file's bytes with their decoded shape, or the pixels.
void AddImageFeatures(const ConvertOptions& o, const pipeline::ImageFolderSource& source,
                      const Element& e, io::ExampleBuilder* b) {
  const Tensor& image = e.Get("image");
  if (o.image_bytes == "decoded") {
    b->AddBytes("image_raw", {Bytes(image)});
    b->AddInt64("shape", std::span<const int64_t>(image.shape().data(), image.shape().size()));
  } else {
    const Tensor& encoded = e.Get("encoded");
    const fs::path file = source.Files().at(static_cast<size_t>(e.where.file_index)).name;
    const fs::path base = o.root.empty() ? fs::path(o.list).parent_path() : fs::path(o.root);
    b->AddBytes("image/encoded", {Bytes(encoded)});
    b->AddBytes("image/format", {ImageFormatOf(encoded)});
    b->AddInt64("image/height", {image.dim(0)});
    b->AddInt64("image/width", {image.dim(1)});
    b->AddInt64("image/channels", {image.dim(2)});
    b->AddBytes("image/filename", {file.lexically_relative(base).generic_string()});
  }
  b->AddInt64("label", {*e.Get("label").data<int64_t>()});
}

// One Example from a source element (see the header for the features).
void BuildExample(const ConvertOptions& o, const RecordSource& source, const Element& e, int64_t id,
                  io::ExampleBuilder* b) {
  const std::string& format = o.format;
  b->Clear();
  if (format == "text") {
    b->AddBytes("line", {Bytes(e.Get("line"))});
  } else if (format == "fixed") {
    b->AddBytes("record", {Bytes(e.Get("bytes"))});
  } else if (format == "images") {
    AddImageFeatures(o, static_cast<const pipeline::ImageFolderSource&>(source), e, b);
  } else {
    for (const auto& [name, t] : e.features) {
      if (t.dtype() == DType::kInt64) {
        b->AddInt64(name, std::span<const int64_t>(t.data<int64_t>(), t.num_elements()));
      } else if (t.dtype() == DType::kFloat32) {
        b->AddFloat(name, std::span<const float>(t.data<float>(), t.num_elements()));
      } else {
        b->AddBytes(name, {Bytes(t)});
      }
    }
  }
  b->AddInt64("id", {id});
}

// Records skipped so far by this rank's copy of the source (kSkip).
int64_t SkippedRecords(const std::string& format, const RecordSource& source) {
  if (format == "images") {
    return static_cast<const pipeline::ImageFolderSource&>(source).counters().skipped_records;
  }
  if (format == "jsonl") {
    return static_cast<const pipeline::JsonLinesSource&>(source).counters().skipped_records;
  }
  return 0;
}

}  // namespace

bool IsPipelineSourceFormat(const std::string& format) {
  return format == "text" || format == "fixed" || format == "jsonl" || format == "images";
}

int RunPipelineSource(MpiEnvironment& env, const ConvertOptions& o, comm::Communicator& comm) {
  auto source = OpenSource(o);
  const size_t files = source->Files().size();
  // Counting: file f on rank f % P; skipped images must be found by decoding.
  const bool trust_known = !(o.format == "images" && o.on_error == "skip");
  std::vector<int64_t> counts(files, 0);
  for (size_t f = static_cast<size_t>(env.rank()); f < files;
       f += static_cast<size_t>(env.size())) {
    counts[f] = CountRecords(*source, f, trust_known);
  }
  comm::AllreduceInt64(comm, counts.data(), files, comm::ReduceOp::kSum);
  // Each file was counted by one rank: the sum of the ranks' skips is the input's.
  const int64_t skipped =
      comm::AllreduceInt64(comm, SkippedRecords(o.format, *source), comm::ReduceOp::kSum);
  if (skipped > 0) {
    SF_LOG0(Warn) << "skipped " << skipped << " bad " << (o.format == "images" ? "images" : "lines")
                  << " (input.on_error=skip)";
  }
  std::vector<int64_t> first(files + 1, 0);  // global id of each file's first record
  for (size_t f = 0; f < files; ++f) first[f + 1] = first[f] + counts[f];
  const int64_t total = first[files];
  const int64_t n = o.limit >= 0 ? std::min(o.limit, total) : total;
  const ShardPlan plan(n, o.shards, env.rank(), env.size());
  const io::RowRange mine = plan.MyRecords();
  SF_LOG0(Info) << "converting " << n << " records (" << o.format << ", " << files
                << " files) into " << plan.shards() << " shards on " << env.size() << " ranks";

  RecordCursor cursor(first, mine.begin, [&](size_t f) { return source->Open(f, {}); });

  ProgressReporter progress(mine.size(), {.label = "convert", .unit = "records"});
  io::ExampleBuilder builder;
  std::string serialized;
  Element e;
  int64_t channels = 0;  // the most any image of this rank has
  for (int64_t s = plan.MyShards().begin; s < plan.MyShards().end; ++s) {
    io::TFRecordWriter writer(ShardFileName(o.out_path, s, plan.shards(), o.compression));
    const io::RowRange ids = plan.ShardRecords(s);
    for (int64_t i = ids.begin; i < ids.end; ++i) {
      cursor.Next(&e);
      if (o.format == "images") channels = std::max(channels, e.Get("image").dim(2));
      BuildExample(o, *source, e, i, &builder);
      serialized.clear();
      builder.SerializeTo(&serialized);
      writer.Write(serialized);
      progress.Advance(1, 1);
    }
    writer.Close();
  }
  progress.Finish();
  channels = comm::AllreduceInt64(comm, channels, comm::ReduceOp::kMax);

  if (env.rank() == 0) {
    nlohmann::json meta{{"kind", o.format},
                        {"records", n},
                        {"shards", plan.shards()},
                        {"compression", o.compression},
                        {"source", source->FormatDescription()}};
    nlohmann::json shards = nlohmann::json::array();
    for (int64_t s = 0; s < plan.shards(); ++s) {
      shards.push_back(
          {{"file", fs::path(ShardFileName(o.out_path, s, plan.shards(), o.compression))
                        .filename()
                        .string()},
           {"first_id", plan.ShardRecords(s).begin},
           {"records", plan.ShardRecords(s).size()}});
    }
    meta["files"] = shards;
    if (o.format == "images") {
      const auto& images = static_cast<const pipeline::ImageFolderSource&>(*source);
      meta["classes"] = images.class_names();
      if (o.image_bytes == "encoded") {
        // What shardflow-train's [data] features reads the shards with (images of any size).
        meta["data_features"] = "image/encoded:image:uint8:*x*x" +
                                std::to_string(std::max<int64_t>(channels, 1)) +
                                ", label:int64:int64:scalar";
      }
      if (!o.root.empty()) images.WriteLabelMap(o.out_path + ".labels.csv");
    }
    const std::string path = o.out_path + ".meta.json";
    std::ofstream out(path);
    out << meta.dump(2) << "\n";
    out.close();
    if (!out) throw Error(ErrorCode::kIo, "cannot write the metadata file", {.file = path});
  }
  return 0;
}

}  // namespace shardflow::convert
