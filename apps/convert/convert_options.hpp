// shardflow-convert's settings: the [input], [preprocess] and [output] config sections, the
// output schema text printed by --help, and checks that run on every rank in the parse phase.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace shardflow::convert {

struct ConvertOptions {
  // [input]
  // idx | csv | series | table | hdf5 | text | fixed | jsonl | images | documents
  std::string format = "idx";
  std::string split = "train";        // idx: train | test (test reads the t10k files)
  std::string dir;                    // idx: folder of the Fashion-MNIST files
  std::string images;                 // idx: images file (overrides dir/split, with labels)
  std::string labels;                 // idx: labels file
  std::string path;                   // csv: folder of *.csv files; hdf5: the file
  std::string kind = "images";        // hdf5: images | series
  std::vector<std::string> datasets;  // hdf5: images [labels] | series
  std::string time_column = "t";      // csv: the timestamp column; every other column is a channel
  int64_t limit = -1;                 // at most this many output records; -1: all
  // text | fixed | jsonl | images (io/pipeline/sources; see source_input.hpp)
  std::vector<std::string> files;       // text/fixed/jsonl: glob patterns of the input files
  int64_t header_lines = 0;             // text/jsonl: lines skipped at the start of every file
  int64_t record_bytes = 0;             // fixed: bytes per record (> 0)
  int64_t header_bytes = 0;             // fixed: bytes skipped at the start of every file
  int64_t footer_bytes = 0;             // fixed: bytes skipped at the end of every file
  std::string schema;                   // jsonl: "name:type,..." (int64|float32|bytes|T[N])
  std::string on_error = "fail";        // jsonl/images: bad line/image; fixed: partial tail
  std::string root;                     // images: root/CLASS/*.jpg|png
  std::string list;                     // images: a list file of path,label lines
  std::string image_bytes = "encoded";  // images: encoded (the files' bytes) | decoded
  // table (CSV files of feature and label columns; table_output.hpp); files: input.files
  std::string table_format = "csv";        // csv | jsonl
  std::vector<std::string> table_columns;  // name:int64|float32|float64|string[=default]
  std::vector<std::string> categorical;    // int64 columns that get a vocabulary too
  bool table_header = true;                // the first record names the columns
  std::vector<std::string> column_names;   // the files' column names (no header)
  std::string delimiter = ",";             // one character or "tab"
  std::vector<std::string> na_values;      // fields read as missing besides ""
  int64_t chunk_mb = 16;                   // statistics/reading unit (rank-count independent)
  // documents (text files cut into documents, tokenized; document_input.hpp)
  std::string documents = "line";  // line | file | a delimiter line ("%": fortune files)
  // [preprocess]
  std::string tokenizer = "byte";     // documents: byte (256 byte ids + end + pad) | bpe
  int64_t vocabulary = 1024;          // documents, bpe: tokens learned (256 bytes + merges)
  std::string bpe_vocab;              // documents, bpe: a vocab.json to read instead of learning
  std::string bpe_merges;             // documents, bpe: its merges.txt
  std::string wordpiece_vocab;        // documents, wordpiece: BERT's vocab.txt
  bool lowercase = true;              // documents, wordpiece: an uncased vocabulary
  int64_t pack = 0;                   // documents: language-model blocks of this many tokens, or
  int64_t max_tokens = 0;             // documents: classification records of this many tokens
  std::string too_long = "truncate";  // documents, max_tokens: truncate (counted) | fail
  double holdout = 0.1;            // documents: the fraction of documents held out for evaluation
  std::string normalize = "none";  // none | scale | standardize
  int64_t window = 0;              // series: window length W (> 0 for series inputs)
  int64_t stride = 1;              // series: step between window starts S
  // [output]
  std::string out_format = "tfrecord";  // tfrecord | hdf5
  std::string out_path;                 // tfrecord: file prefix; hdf5: the file
  int64_t shards = 8;                   // tfrecord: number of shard files
  std::string compression = "none";     // none | gzip | zlib

  // Whether the input is a set of series (windows are written) or of images.
  // csv is the series mode's first name (a folder of per-asset series); series names it too.
  bool is_series() const {
    return format == "csv" || format == "series" || (format == "hdf5" && kind == "series");
  }
};

// Registers every key bound to *options, with a hook that checks combinations and that input
// files exist (Error kInvalidArgument / kNotFound naming the key and the path).
// REQUIRES: *options outlives `schema`.
void RegisterConvertOptions(ConfigSchema& schema, ConvertOptions* options);

// The record schemas, the normalization rules, the file names and the sensor CSV generator,
// printed after the flags by --help.
std::string ConvertHelpEpilogue();

}  // namespace shardflow::convert
