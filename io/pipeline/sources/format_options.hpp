// FormatOptions: the [data] keys of the line, JSON-lines, fixed-length and image-folder formats
// (format = text | jsonl | fixed | images), their registration, validation, and the decode step
// that makes their elements batchable.
//
//   format  keys (defaults)                          batch features
//   text    header_lines (0), line_bytes (REQUIRED)  "line" uint8 [B, line_bytes] (zero-padded),
//                                                    "length" int64 [B] (bytes of the line); a
//                                                    longer line is Error(kDataLoss) naming file
//                                                    and line, never truncated
//   jsonl   json_schema (REQUIRED, "id:int64,        one tensor per field (json_lines_source.hpp);
//           emb:float32[4]"), header_lines (0),      bytes fields batch only when equal in length
//           on_error = fail|skip
//   fixed   record_bytes (REQUIRED), header_bytes,   "bytes" uint8 [B, record_bytes]
//           footer_bytes (0), tail = fail|skip
//   images  root (folder of CLASS subfolders) or     "image" uint8 [B, H, W, C] (all images one
//           list (file of "path,label" lines),       size, or use augmentations resize:HxW),
//           channels (0: as stored), on_error,       "label" int64 [B]
//           label_map (rank 0 writes it)
// For images `files` is not used (root or list names the data); every other format needs it.
// Keys of other formats are ignored. Validation errors are Error(kInvalidArgument) whose key
// is the missing or bad key ("data.line_bytes").
// Counting (CountLocalRecords): fixed/text/jsonl/images have no record index, so the rank's
// shard is read once (images: decoded once) — one pass, no caching.
// Thread-safety: registration/validation as core/config; the decode MapFn is reentrant.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "io/pipeline/data_options.hpp"
#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {

struct FormatOptions {
  int64_t header_lines = 0;       // text, jsonl
  int64_t line_bytes = 0;         // text: REQUIRED > 0 (unless raw_lines)
  bool raw_lines = false;         // not a key: text lines go unpadded to a tokenizer
  std::string json_schema;        // jsonl: REQUIRED
  uint64_t record_bytes = 0;      // fixed: REQUIRED > 0
  uint64_t header_bytes = 0;      // fixed
  uint64_t footer_bytes = 0;      // fixed
  std::string tail = "fail";      // fixed: fail | skip
  std::string on_error = "fail";  // jsonl, images: fail | skip
  std::string root;               // images
  std::string list;               // images
  int64_t channels = 0;           // images: 0, 1 or 3
  std::string label_map;          // images: "label,class" file rank 0 writes ('' none)
};

// True for the formats this file serves.
bool IsExtraFormat(const std::string& format);

// Registers the keys above in `section`, bound to *options.
void RegisterFormatOptions(ConfigSchema& schema, const std::string& section,
                           FormatOptions* options);

// Throws Error(kInvalidArgument) with key "<section>.<key>" when a key the format needs is
// missing or two exclusive keys are set. No-op for other formats.
void CheckFormatOptions(const std::string& format, const FormatOptions& options,
                        const std::string& section);

// Decode step for `format` (text: pad into line_bytes); an empty MapFn when none is needed.
MapFn MakeFormatDecoder(const std::string& format, const FormatOptions& options);

// The `files` patterns the pipeline lists for `format` (images: root or list).
std::vector<std::string> FormatFiles(const std::string& format, const FormatOptions& options,
                                     const std::vector<std::string>& files);

// For images with label_map set and rank == 0: `factory` whose sources also write the label map
// (ImageFolderSource::WriteLabelMap) when opened. Otherwise `factory` itself.
SourceFactory WithLabelMap(SourceFactory factory, const std::string& format,
                           const FormatOptions& options, int rank);

}  // namespace shardflow::pipeline
