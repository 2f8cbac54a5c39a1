// Pipeline-source inputs of shardflow-convert: text lines, fixed-length records, JSON lines and
// image folders (io/pipeline/sources), turned into TFRecord shards of tf.train.Example.
//
// Record order: files in sorted name order (images: class folders sorted, then names), records
// in file order; global id = position in that order. Every rank counts the records of files
// r, r+P, ... (fixed-length counts come from file sizes), the counts are all-reduced, and rank r
// then reads only the files holding its shards' ids. Output is the same for any rank count.
// Example features per input (plus "id" int64, the global index):
//   text    line       bytes  the line without its newline
//   fixed   record     bytes  the record's record_bytes bytes
//   jsonl   <schema>   int64 / float / bytes, one feature per schema field
//   images  image/encoded  bytes  the file's bytes (input.image_bytes = encoded, the default;
//           each image is decoded once, so a corrupt one fails or is skipped here, not in
//           training); image/format "jpeg"|"png"; image/height, image/width, image/channels;
//           image/filename (relative to input.root or the list's folder); label int64.
//           PREFIX.meta.json's data_features reads them back. With image_bytes = decoded:
//           image_raw bytes, decoded uint8 [H,W,C]; shape int64 [H,W,C]; label int64
#pragma once

#include "apps/convert/convert_options.hpp"
#include "comm/communicator.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::convert {

// True for text | fixed | jsonl | images.
bool IsPipelineSourceFormat(const std::string& format);

// Converts options.format's input into options.out_path's shards. Collective over `comm`.
int RunPipelineSource(MpiEnvironment& env, const ConvertOptions& options, comm::Communicator& comm);

}  // namespace shardflow::convert
