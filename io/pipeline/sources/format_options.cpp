#include "io/pipeline/sources/format_options.hpp"

#include <cstring>

#include "core/error.hpp"
#include "io/pipeline/sources/image_folder_source.hpp"
#include "io/pipeline/sources/json_lines_source.hpp"

namespace shardflow::pipeline {
namespace {

[[noreturn]] void Missing(const std::string& section, const std::string& key,
                          const std::string& format, const std::string& hint) {
  throw Error(ErrorCode::kInvalidArgument,
              "format " + format + " needs " + section + "." + key + " to be set",
              {.key = section + "." + key, .hint = hint});
}

}  // namespace

bool IsExtraFormat(const std::string& format) {
  return format == "text" || format == "jsonl" || format == "fixed" || format == "images";
}

void RegisterFormatOptions(ConfigSchema& s, const std::string& sec, FormatOptions* o) {
  s.Add(sec, "header_lines", &o->header_lines,
        "text, jsonl: lines skipped at the start of every file")
      .NonNegative();
  s.Add(sec, "line_bytes", &o->line_bytes,
        "text (required): \"line\" is padded to this many bytes; a longer line is an error")
      .NonNegative();
  s.Add(sec, "json_schema", &o->json_schema,
        "jsonl (required): fields name:type, type int64|float32|bytes|int64[N]|float32[N]");
  s.Add(sec, "record_bytes", &o->record_bytes, "fixed (required): bytes per record");
  s.Add(sec, "header_bytes", &o->header_bytes, "fixed: bytes skipped at the start of each file");
  s.Add(sec, "footer_bytes", &o->footer_bytes, "fixed: bytes skipped at the end of each file");
  s.AddChoice(sec, "tail", &o->tail, {"fail", "skip"},
              "fixed: a partial last record fails, or is dropped and counted");
  s.AddChoice(sec, "on_error", &o->on_error, {"fail", "skip"},
              "jsonl, images: a bad line or corrupt image fails, or is skipped and counted");
  s.Add(sec, "root", &o->root, "images: folder of CLASS subfolders (labels: sorted class order)");
  s.Add(sec, "list", &o->list, "images: file of path,label lines (instead of root)");
  s.Add(sec, "channels", &o->channels, "images: 0 as stored, 1 grey, 3 RGB")
      .Check([](const int64_t& v) { return v == 0 || v == 1 || v == 3; }, "must be 0, 1 or 3");
  s.Add(sec, "label_map", &o->label_map,
        "images: path of the label,class file rank 0 writes ('' none)");
}

void CheckFormatOptions(const std::string& format, const FormatOptions& o, const std::string& sec) {
  if (o.header_lines != 0 && format != "text" && format != "jsonl") {
    throw Error(ErrorCode::kInvalidArgument,
                sec + ".header_lines applies to format text and jsonl, not " + format,
                {.key = sec + ".header_lines",
                 .hint = format == "csv" ? "csv_skip_lines skips records before a CSV's header"
                                         : "leave it out"});
  }
  if (format == "text" && o.line_bytes <= 0 && !o.raw_lines) {
    Missing(sec, "line_bytes", format, "the longest line in bytes, e.g. line_bytes = 256");
  }
  if (format == "jsonl" && o.json_schema.empty()) {
    Missing(sec, "json_schema", format, "e.g. json_schema = id:int64, emb:float32[4]");
  }
  if (format == "jsonl") ParseJsonSchema(o.json_schema, sec + ".json_schema");
  if (format == "fixed" && o.record_bytes == 0) {
    Missing(sec, "record_bytes", format, "bytes per record, e.g. 3073 for CIFAR-10");
  }
  if (format == "images") {
    if (o.root.empty() && o.list.empty()) {
      Missing(sec, "root", format, "a folder of CLASS subfolders, or set list");
    }
    if (!o.root.empty() && !o.list.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "format images takes " + sec + ".root or " + sec + ".list, not both",
                  {.key = sec + ".list"});
    }
  }
}

MapFn MakeFormatDecoder(const std::string& format, const FormatOptions& options) {
  if (format != "text" || options.raw_lines) return {};
  const int64_t width = options.line_bytes;
  return [width](Element& e, const MapContext&) {
    const Tensor& line = e.Get("line");
    const int64_t n = line.num_elements();
    if (n > width) {
      ErrorContext ctx = e.where.Context();
      ctx.key = "line_bytes";
      throw Error(ErrorCode::kDataLoss,
                  "line of " + std::to_string(n) +
                      " bytes is longer than line_bytes = " + std::to_string(width),
                  ctx);
    }
    Tensor padded(DType::kUInt8, {width});
    if (n > 0) std::memcpy(padded.data<uint8_t>(), line.data<uint8_t>(), static_cast<size_t>(n));
    Tensor length(DType::kInt64, {});
    *length.data<int64_t>() = n;
    e.features.clear();
    e.features.emplace_back("line", std::move(padded));
    e.features.emplace_back("length", std::move(length));
  };
}

std::vector<std::string> FormatFiles(const std::string& format, const FormatOptions& o,
                                     const std::vector<std::string>& files) {
  if (format != "images") return files;
  return {o.root.empty() ? o.list : o.root};
}

SourceFactory WithLabelMap(SourceFactory factory, const std::string& format,
                           const FormatOptions& options, int rank) {
  if (format != "images" || options.label_map.empty() || rank != 0) return factory;
  const std::string path = options.label_map;
  return [factory = std::move(factory), path](const std::string& name,
                                              const std::vector<std::string>& files) {
    std::shared_ptr<const RecordSource> source = factory(name, files);
    if (const auto* images = dynamic_cast<const ImageFolderSource*>(source.get())) {
      images->WriteLabelMap(path);
    }
    return source;
  };
}

}  // namespace shardflow::pipeline
