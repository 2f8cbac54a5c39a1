#include "apps/convert/convert_options.hpp"

#include <filesystem>

#include "apps/convert/table_input.hpp"
#include "core/error.hpp"
#include "io/idx.hpp"
#include "io/pipeline/sources/csv_stream_source.hpp"
#include "io/pipeline/sources/json_lines_source.hpp"
#include "io/text/documents.hpp"

namespace shardflow::convert {
namespace {

namespace fs = std::filesystem;

void RequireExists(const std::string& path, const std::string& key, bool directory) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    throw Error(ErrorCode::kNotFound, "input not found: " + path, {.file = path, .key = key});
  }
  if (directory != fs::is_directory(status)) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("input must be a ") + (directory ? "folder" : "file") + ": " + path,
                {.file = path, .key = key});
  }
}

void Validate(const ConvertOptions& o) {
  auto bad = [](const std::string& what, const std::string& key) {
    throw Error(ErrorCode::kInvalidArgument, what, {.key = key});
  };
  if (o.out_path.empty()) bad("output.path is required", "output.path");
  if (o.header_lines != 0 && o.format != "text" && o.format != "jsonl" && o.format != "table") {
    bad("input.header_lines applies to input.format text, jsonl and table, not " + o.format,
        "input.header_lines");
  }
  if (o.format == "table") {
    if (o.out_format != "tfrecord")
      bad("input.format=table converts to tfrecord only", "output.format");
    if (o.files.empty())
      bad("input.files (glob patterns of CSV files) is required for input.format=table",
          "input.files");
    if (o.table_columns.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "input.columns is required for input.format=table",
                  {.key = "input.columns",
                   .hint = "e.g. --input.columns=x1:float32,city:string,label:int64"});
    }
    TableCsvOptions(o);  // every CSV key checked here, once

    if (o.normalize != "none") {
      bad("input.format=table writes raw values and OUT.stats.json; normalise when reading "
          "(data.assemble = NAME:norm)",
          "preprocess.normalize");
    }
    if (o.chunk_mb < 1) bad("input.chunk_mb must be >= 1", "input.chunk_mb");
  } else if (o.format == "text" || o.format == "fixed" || o.format == "jsonl" ||
             o.format == "images") {
    if (o.out_format != "tfrecord") {
      bad("input.format=" + o.format + " converts to output.format=tfrecord only", "output.format");
    }
    if (o.normalize != "none") {
      bad("preprocess.normalize applies to idx, csv and hdf5 inputs", "preprocess.normalize");
    }
    if (o.format == "images") {
      if (o.root.empty() == o.list.empty()) {
        bad("input.format=images needs exactly one of input.root and input.list", "input.root");
      }
      if (!o.root.empty()) RequireExists(o.root, "input.root", true);
      if (!o.list.empty()) RequireExists(o.list, "input.list", false);
    } else if (o.files.empty()) {
      bad("input.files (glob patterns) is required for input.format=" + o.format, "input.files");
    }
    if (o.format == "fixed" && o.record_bytes <= 0) {
      bad("input.record_bytes must be > 0 for input.format=fixed", "input.record_bytes");
    }
    if (o.format == "jsonl" && o.schema.empty()) {
      bad("input.schema is required for input.format=jsonl", "input.schema");
    }
    if (o.format == "jsonl") {
      for (const auto& field : pipeline::ParseJsonSchema(o.schema, "input.schema")) {
        if (field.name == "id") {
          throw Error(ErrorCode::kInvalidArgument,
                      "schema field 'id' collides with the record id feature shardflow-convert "
                      "writes",
                      {.key = "input.schema",
                       .hint = "leave it out of input.schema or rename it in the JSON files"});
        }
      }
    }
  } else if (o.format == "documents") {
    if (o.out_format != "tfrecord") {
      bad("input.format=documents converts to output.format=tfrecord only", "output.format");
    }
    if (o.files.empty()) {
      bad("input.files (glob patterns of text files) is required for input.format=documents",
          "input.files");
    }
    text::CheckDocumentSplit(o.documents, "input.documents");
    if ((o.pack > 0) == (o.max_tokens > 0)) {
      bad("input.format=documents needs one of preprocess.pack (language-model blocks of N "
          "tokens) and preprocess.max_tokens (classification records of N tokens)",
          "preprocess.pack");
    }
    if (!(o.holdout >= 0 && o.holdout < 1)) {
      bad("preprocess.holdout must be in [0, 1)", "preprocess.holdout");
    }
    if (o.bpe_vocab.empty() != o.bpe_merges.empty()) {
      bad("preprocess.bpe_vocab and preprocess.bpe_merges go together", "preprocess.bpe_vocab");
    }
    if (o.tokenizer == "wordpiece" && o.wordpiece_vocab.empty()) {
      bad("preprocess.tokenizer=wordpiece needs preprocess.wordpiece_vocab (a vocab.txt)",
          "preprocess.wordpiece_vocab");
    }
    if (!o.bpe_vocab.empty() && o.tokenizer != "bpe") {
      bad("preprocess.bpe_vocab needs preprocess.tokenizer=bpe", "preprocess.tokenizer");
    }
  } else if (o.format == "idx") {
    if (o.images.empty() != o.labels.empty()) {
      bad("input.images and input.labels go together", "input.images");
    }
    if (!o.images.empty()) {
      RequireExists(o.images, "input.images", false);
      RequireExists(o.labels, "input.labels", false);
    } else {
      const std::string prefix = o.dir + "/" + (o.split == "train" ? "train" : "t10k");
      RequireExists(prefix + "-images-idx3-ubyte.gz", "input.dir", false);
      RequireExists(prefix + "-labels-idx1-ubyte.gz", "input.dir", false);
    }
  } else {
    if (o.path.empty()) bad("input.path is required for input.format=" + o.format, "input.path");
    RequireExists(o.path, "input.path", o.format == "csv" || o.format == "series");
  }
  if (o.format == "hdf5") {
    const size_t want_max = o.kind == "images" ? 2 : 1;
    if (o.datasets.empty() || o.datasets.size() > want_max) {
      bad(o.kind == "images" ? "input.datasets must name the images and optionally the labels"
                             : "input.datasets must name one series dataset [assets, steps, "
                               "channels]",
          "input.datasets");
    }
  }
  if (o.is_series() && o.window <= 0) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "preprocess.window (the window length) must be > 0 for series inputs",
        {.key = "preprocess.window",
         .hint = o.format == "hdf5"
                     ? ""
                     : "input.format=" + o.format +
                           " reads a folder of per-asset time series; for a table of feature and "
                           "label columns use --input.format=table --input.files=... "
                           "--input.columns=..."});
  }
  if (!o.is_series() && o.window != 0) {
    bad("preprocess.window applies to series inputs (csv, or hdf5 with input.kind=series)",
        "preprocess.window");
  }
}

}  // namespace

void RegisterConvertOptions(ConfigSchema& schema, ConvertOptions* o) {
  o->dir = io::kFashionMnistDir;
  schema.DescribeSection("input", "what to convert");
  schema.AddChoice(
      "input", "format", &o->format,
      {"idx", "csv", "series", "table", "hdf5", "text", "fixed", "jsonl", "images", "documents"},
      "idx: images+labels files; csv or series: a folder of per-asset time series; "
      "table: CSV files of feature and label columns; hdf5: datasets; "
      "text: lines; fixed: fixed-length records; jsonl: JSON lines; images: "
      "class folders or a list file; documents: text files cut into documents, "
      "tokenized and packed for a language model");
  schema.AddChoice("input", "split", &o->split, {"train", "test"},
                   "idx: Fashion-MNIST split read from input.dir (test = the t10k files)");
  schema.Add("input", "dir", &o->dir, "idx: folder holding {train,t10k}-*-ubyte.gz");
  schema.Add("input", "images", &o->images, "idx: an images file (with input.labels)");
  schema.Add("input", "labels", &o->labels, "idx: a labels file (with input.images)");
  schema.Add("input", "path", &o->path, "csv: folder of *.csv (one per asset); hdf5: the file");
  schema.AddChoice("input", "kind", &o->kind, {"images", "series"},
                   "hdf5: images [N,H,W(,C)] (+labels [N]) or series [assets,steps(,channels)]");
  schema.Add("input", "datasets", &o->datasets, "hdf5: dataset names: images[,labels] or series");
  schema
      .Add("input", "time_column", &o->time_column,
           "csv: the timestamp column (must increase); all other columns are channels")
      .NonEmpty();
  schema.Add("input", "files", &o->files, "text/fixed/jsonl: glob patterns of the input files");
  schema
      .Add("input", "header_lines", &o->header_lines,
           "text/jsonl/table: lines skipped at the start of every file (table: records before "
           "the header, e.g. a line of metadata)")
      .NonNegative();
  schema.Add("input", "record_bytes", &o->record_bytes, "fixed: bytes per record (CIFAR-10: 3073)")
      .NonNegative();
  schema.Add("input", "header_bytes", &o->header_bytes, "fixed: bytes before the first record")
      .NonNegative();
  schema.Add("input", "footer_bytes", &o->footer_bytes, "fixed: bytes after the last record")
      .NonNegative();
  schema.Add("input", "schema", &o->schema,
             "jsonl: fields name:type, type int64|float32|bytes|int64[N]|float32[N]");
  schema.AddChoice("input", "on_error", &o->on_error, {"fail", "skip"},
                   "jsonl: bad line; images: corrupt image; fixed: partial last record — fail, "
                   "or skip and count");
  schema.Add("input", "root", &o->root, "images: folder of class folders root/CLASS/*.jpg|png");
  schema.Add("input", "list", &o->list, "images: list file of path,label lines");
  schema.AddChoice("input", "image_bytes", &o->image_bytes, {"encoded", "decoded"},
                   "images: encoded keeps each file's bytes (JPEG/PNG, no re-encode; every image "
                   "is decoded once to check it) as image/encoded; decoded writes its uint8 "
                   "values as image_raw");
  schema.Add("input", "columns", &o->table_columns,
             "table: columns written, in order, name:int64|float32|float64|string[=default]");
  schema.AddChoice("input", "table_format", &o->table_format, {"csv", "jsonl"},
                   "table: CSV files, or JSON lines (one object per line, a field per column)");
  schema.Add("input", "categorical", &o->categorical,
             "table: int64 columns that also get a vocabulary (strings always do)");
  schema.Add("input", "header", &o->table_header, "table: the first record names the columns");
  schema.Add("input", "column_names", &o->column_names,
             "table: the files' column names (required without a header)");
  schema.Add("input", "delimiter", &o->delimiter, "table: field delimiter, one character or tab");
  schema.Add("input", "na_values", &o->na_values,
             "table: fields read as missing besides the empty one (take the column default)");
  schema.Add("input", "chunk_mb", &o->chunk_mb,
             "table: MiB per chunk, the unit of reading and statistics (rank-count independent)");
  schema.Add("input", "limit", &o->limit, "convert only the first N output records; -1: all")
      .Check([](const int64_t& v) { return v >= -1; }, "must be >= -1");
  schema.Add("input", "documents", &o->documents,
             "documents: line (one per line), file (one per file) or a delimiter line such as % "
             "(fortune files)");
  schema.DescribeSection("preprocess", "normalization, windows, tokens");
  schema.AddChoice("preprocess", "tokenizer", &o->tokenizer, {"byte", "bpe", "wordpiece"},
                   "documents: byte = every byte a token (258 ids with end and pad); bpe = "
                   "byte-level byte-pair encoding, learned from the training documents or read; "
                   "wordpiece = BERT's, over preprocess.wordpiece_vocab");
  schema.Add("preprocess", "wordpiece_vocab", &o->wordpiece_vocab,
             "documents, wordpiece: BERT's vocab.txt (needs [UNK], [SEP] and [PAD])");
  schema.Add("preprocess", "lowercase", &o->lowercase,
             "documents, wordpiece: lowercase ASCII letters first (an uncased vocabulary)");
  schema
      .Add("preprocess", "vocabulary", &o->vocabulary,
           "documents, bpe: tokens to learn (256 bytes + merges; end and pad come after)")
      .InRange(256, 1 << 24);
  schema.Add("preprocess", "bpe_vocab", &o->bpe_vocab,
             "documents, bpe: read this vocab.json (GPT-2 layout) instead of learning");
  schema.Add("preprocess", "bpe_merges", &o->bpe_merges,
             "documents, bpe: the merges.txt that goes with preprocess.bpe_vocab");
  schema
      .Add("preprocess", "pack", &o->pack,
           "documents: language-model blocks of N tokens (input and next-token target)")
      .NonNegative();
  schema
      .Add("preprocess", "max_tokens", &o->max_tokens,
           "documents: instead of packing, one classification record per document of this "
           "many tokens (padded), labelled by its file")
      .NonNegative();
  schema.AddChoice("preprocess", "too_long", &o->too_long, {"truncate", "fail"},
                   "documents, max_tokens: a longer document is cut (and counted) or an error");
  schema.Add("preprocess", "holdout", &o->holdout,
             "documents: fraction of the documents (evenly spread) written to OUT-heldout-*");
  schema.AddChoice("preprocess", "normalize", &o->normalize, {"none", "scale", "standardize"},
                   "per channel, statistics over all ranks' data (see below); output float32");
  schema.Add("preprocess", "window", &o->window, "series: window length W (steps)").NonNegative();
  schema.Add("preprocess", "stride", &o->stride, "series: steps between window starts S")
      .Positive();
  schema.DescribeSection("output", "where the records go");
  schema.AddChoice("output", "format", &o->out_format, {"tfrecord", "hdf5"},
                   "tfrecord: shard files; hdf5: one file written collectively");
  schema.Add("output", "path", &o->out_path,
             "tfrecord: prefix of PREFIX-00000-of-000NN.tfrecord; hdf5: the file");
  schema.Add("output", "shards", &o->shards, "tfrecord: number of shard files").InRange(1, 99999);
  schema.AddChoice(
      "output", "compression", &o->compression, {"none", "gzip", "zlib"},
      "tfrecord: whole-file GZIP (.gz) or ZLIB (.zlib); hdf5: either = deflate level 4");
  schema.OnResolved([o] { Validate(*o); });
}

std::string ConvertHelpEpilogue() {
  return R"(
Work division (SPMD under mpirun): output records are numbered globally (id = 0..N-1, in input
order: images in file order; windows by asset (files sorted by name / dataset rows), then start).
Shard s of S holds ids [s*N/S, (s+1)*N/S); rank r of P writes shards [r*S/P, (r+1)*S/P) and
reads only the input those need. Statistics are combined per shard (images) or per asset
(series) in a fixed order, so the files are byte-identical for any number of ranks.

Files: PREFIX-00000-of-00008.tfrecord (.tfrecord.gz / .tfrecord.zlib when compressed), one per
shard (an empty shard is an empty file), and PREFIX.meta.json (written by rank 0: the schema,
counts per shard, normalization parameters). With output.format=hdf5: one file, each rank
writing the rows of its shards (output.shards still sets the work division and stats blocks).

Example schema, text | fixed | jsonl | images inputs (TFRecord; every record also has id int64;
records numbered in sorted file order, then file order; PREFIX.labels.csv maps labels to class
folder names for images from input.root):
  text    line       bytes   the line without "\n" / "\r\n"
  fixed   record     bytes   input.record_bytes bytes
  jsonl   one feature per input.schema field: int64 -> int64, float32 -> float, bytes -> bytes
  images  image/encoded bytes  the file's bytes (JPEG or PNG, not re-encoded); image/format
                         bytes "jpeg"|"png"; image/height, image/width, image/channels int64;
                         image/filename bytes (relative to input.root or the list's folder);
                         label int64. PREFIX.meta.json's data_features reads them back:
                         image/encoded:image:uint8:*x*xC, label:int64:int64:scalar (any size:
                         start data.augmentations with random_resized_crop:HxW or
                         center_crop:HxW). The keys are TensorFlow's ImageNet TFRecords'.
          with input.image_bytes=decoded: image_raw bytes, decoded uint8 [H,W,C]; shape int64
                         [H,W,C]; label int64
Example schema, idx | hdf5 images (TFRecord, one tf.train.Example per image):
  image_raw  bytes   H*W*C uint8 values, row-major [H,W,C], when preprocess.normalize=none and
                     the input is uint8; else float (H*W*C float32 values). PREFIX.meta.json's
                     data_features is the [data] features line that reads the shards back
  label      int64   the class (-1 when an HDF5 input has no labels dataset)
  id         int64   the global record index
  shape      int64   [H, W, C]
Example schema, series windows:
  window     float   W*C values, row-major [W, C] (step-major: all channels of step 0 first)
  shape      int64   [W, C]
  asset_id   int64   the asset (index of the CSV file in name order / row of the HDF5 dataset)
  id         int64   the global window index
  start      int64   the step (row) of the asset where the window starts
HDF5 output datasets: images [N,H,W(,C)] uint8|float32, labels [N] int64, ids [N] int64; or
  windows [N,W,C] float32, asset_ids [N] int64, starts [N] int64, ids [N] int64; with
  normalization also norm_offset [C] and norm_divisor [C] float64 (value = (x - offset) / divisor).

Normalization (per channel; images: the last dimension when rank 4, else one channel):
  scale        uint8 images: x / 255. Other data: (x - min) / (max - min) with the global
               min and max (a constant channel becomes 0).
  standardize  (x - mean) / std, population std over all values of the data converted (images:
               the output images; series: the whole series of every asset with >= 1 output
               window); std 0 counts as 1. Partial (count, mean, M2, min, max) per block are
               all-reduced in double and combined in block order (Chan et al.).
Series windows: an asset of T steps gives floor((T - W) / S) + 1 windows (none when T < W).
CSV inputs: a header row; input.time_column must strictly increase; every other column is a
channel and every file must have the same header; values must be finite numbers.

Sensor CSV generator (for the LSTM autoencoder workload):
  /usr/bin/python3 scripts/make_sensor_csv.py --out DIR --assets N --steps T --channels C
      [--seed 1] [--anomalies 3]
  writes DIR/asset-0000.csv ... with header t,ch0,...,chC-1: noisy sinusoids per channel with
  a few injected anomalies (spikes, level shifts), and DIR/anomalies.txt listing them.

Examples (a line continues on the next when that is indented further):
  mpirun -np 4 shardflow-convert --input.split=test --output.path=out/fmnist-test
  /usr/bin/python3 scripts/make_sensor_csv.py --out sensors --assets 8 --steps 300 --channels 4
  mpirun -np 2 shardflow-convert --input.format=csv --input.path=sensors --preprocess.window=64
      --preprocess.stride=16 --preprocess.normalize=standardize --output.path=out/sensors
  mpirun -np 2 shardflow-convert --input.format=jsonl --input.files='logs/*.jsonl'
      --input.schema='key:int64,text:bytes,emb:float32[4]' --output.path=out/logs
  mpirun -np 2 shardflow-convert --input.format=images --input.root=photos --output.path=out/photos
  mpirun -np 2 shardflow-convert --input.format=hdf5 --input.path=f.h5 --input.datasets=images,labels
      --output.format=hdf5 --output.path=out/f.h5
)";
}

}  // namespace shardflow::convert
