// OpenRecordSource: the record sources of the tree by format name, as a SourceFactory
// (data_options.hpp).
//
//   format     files                           elements (before decode)
//   tfrecord   TFRecord files (.gz/.zlib ok)   "record": uint8 [n], a serialized Example
//   hdf5       HDF5 files                      one tensor per dataset named in `features`
//                                              (aligned datasets: same row count), a row each
//   idx        IDX image files (*images-idx3*) "image": uint8 [H, W], "label": int64 []; the
//              paired labels file (*labels-idx1*, same suffix) is found next to it
//   csv        CSV files (.gz/.zlib ok)        one scalar per column of options.csv.columns
//                                              or of `features` (csv_stream_source.hpp)
//   text       text files, plain or GZIP       "line": uint8 [n] (text_line_source.hpp)
//   jsonl      JSON Lines files                the schema's fields (json_lines_source.hpp)
//   fixed      fixed-length record files       "bytes": uint8 [record_bytes]
//   images     ignored: options.images names   "image": uint8 [h, w, c], "label": int64 []
//              the root folder or list file    (image_folder_source.hpp)
// An unknown format is Error(kInvalidArgument) naming the [data] key `format` and the known
// names. Thread-safety: the returned sources follow record_source.hpp. The HDF5 source
// serialises its HDF5 calls on one process-wide mutex (Debian's HDF5 is not thread-safe) and
// opens files on the calling rank alone (io::SelfCommunicator(); independent reads).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/compression.hpp"
#include "io/pipeline/data_options.hpp"
#include "io/pipeline/fixed_length_source.hpp"
#include "io/pipeline/sources/csv_stream_source.hpp"
#include "io/pipeline/sources/image_folder_source.hpp"
#include "io/pipeline/sources/json_lines_source.hpp"
#include "io/tfrecord_reader.hpp"

namespace shardflow::pipeline {

struct SourceOptions {
  io::Compression compression = io::Compression::kAuto;  // tfrecord
  io::OnCorrupt on_corrupt = io::OnCorrupt::kFail;       // tfrecord
  std::vector<std::string> finite_features;              // tfrecord: floats checked for NaN/Inf
  std::vector<std::string> features;                     // hdf5 datasets, csv columns (specs)
  int64_t block_rows = 256;                              // row formats: rows per read
  int64_t header_lines = 0;                              // text, jsonl
  std::vector<JsonField> json_schema;                    // jsonl (REQUIRED there)
  OnError on_error = OnError::kFail;                     // jsonl
  FixedLengthOptions fixed;                              // fixed (record_bytes REQUIRED)
  ImageFolderOptions images;                             // images (root or list_file)
  CsvSourceOptions csv;                                  // csv (columns: else from features)
};

std::shared_ptr<const RecordSource> OpenRecordSource(const std::string& format,
                                                     const std::vector<std::string>& files,
                                                     const SourceOptions& options);
SourceFactory MakeSourceFactory(SourceOptions options);

// One per row format (hdf5_source.cpp, idx_source.cpp, csv_source.cpp).
std::shared_ptr<const RecordSource> OpenHdf5Source(const std::vector<std::string>& files,
                                                   const SourceOptions& options);
std::shared_ptr<const RecordSource> OpenIdxSource(const std::vector<std::string>& files,
                                                  const SourceOptions& options);
std::shared_ptr<const RecordSource> OpenCsvSource(const std::vector<std::string>& files,
                                                  const SourceOptions& options);

}  // namespace shardflow::pipeline
