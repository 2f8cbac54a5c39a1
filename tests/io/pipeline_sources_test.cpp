// Record sources (tfrecord, idx, csv), feature specs, [data] config keys and the input
// pipeline entry points, in one process (HDF5 needs MPI: input_pipeline_mpi_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>
#include <numeric>

#include "io/example.hpp"
#include "io/idx.hpp"
#include "io/pipeline/feature_spec.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/sources/open_source.hpp"
#include "io/pipeline/sources/tfrecord_source.hpp"
#include "io/tfrecord_writer.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace pipeline_sources_test {

using ::testing::HasSubstr;

std::string ErrorText(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(FeatureSpec, ParsesFullShortAndTensorForms) {
  io::FeatureSpec a = ParseFeatureSpec("image_raw:bytes:uint8:28x28x1");
  EXPECT_EQ(a.name, "image_raw");
  EXPECT_EQ(a.kind, io::FeatureKind::kBytes);
  EXPECT_EQ(a.dtype, DType::kUInt8);
  EXPECT_EQ(a.shape, (Shape{28, 28, 1}));
  io::FeatureSpec b = ParseFeatureSpec(" label:int64:1 ");
  EXPECT_EQ(b.kind, io::FeatureKind::kInt64);
  EXPECT_EQ(b.dtype, DType::kInt64);
  EXPECT_EQ(b.shape, (Shape{1}));
  io::FeatureSpec c = ParseFeatureSpec("w:float:float64:scalar:0.5");
  EXPECT_EQ(c.shape, Shape{});
  EXPECT_EQ(c.default_value, std::vector<double>{0.5});
  io::FeatureSpec d = ParseFeatureSpec("images:uint8:28x28");
  EXPECT_EQ(d.kind, io::FeatureKind::kNone);
  EXPECT_EQ(d.shape, (Shape{28, 28}));
}

TEST(FeatureSpec, RejectsBadSpecsNamingKeyAndText) {
  for (const char* bad : {"", "x:bytes:uint9:3", "x:bytes:uint8:3x0", "x:bytes:uint8:3:1:2", "x",
                          "x:int64:int64:3:abc"}) {
    const std::string what = ErrorText([&] { ParseFeatureSpec(bad, "data.features"); });
    EXPECT_THAT(what, HasSubstr("key=data.features")) << bad;
    EXPECT_THAT(what, HasSubstr(std::string("'") + bad)) << bad;
  }
  EXPECT_THAT(ErrorText([] {
                ParseFeatureSpecs({"a:int64:1", "a:float:1"});
              }),
              HasSubstr("given twice"));
}

// Writes n Examples (id, label = id % 10, pix = 4 bytes) to path.
void WriteExamples(const std::string& path, int64_t first, int64_t n) {
  io::TFRecordWriter w(path);
  for (int64_t id = first; id < first + n; ++id) {
    io::ExampleBuilder b;
    b.AddInt64("id", {id}).AddInt64("label", {id % 10}).AddBytes("pix", {std::string(4, 'a')});
    w.Write(b.Serialize());
  }
  w.Close();
}

std::vector<int64_t> Ids(const Dataset& ds, const std::string& name = "id") {
  std::vector<int64_t> ids;
  PipelineIterator it = ds.MakeIterator();
  Element e;
  while (it.Next(&e)) {
    const Tensor& t = e.Get(name);
    for (int64_t i = 0; i < t.num_elements(); ++i) ids.push_back(t.data<int64_t>()[i]);
  }
  return ids;
}

// Issue 20.15: a shard truncated at a record boundary during a run made the pipeline end early
// and training fail with "internal error: the input ended at step 782 of 938", naming no file.
TEST(TFRecordSource, AFileTruncatedDuringTheRunIsNamed) {
  shardflow::testing::ScratchDir dir("tfsource-truncated");
  const std::string path = (dir / "a.tfrecord").string();
  WriteExamples(path, 0, 10);
  for (bool ranged : {false, true}) {
    TFRecordSource source({path});  // sizes and record counts taken now, as at a run's start
    const uint64_t size = source.Files()[0].size_bytes;
    const uint64_t cut = source.RecordOffsets(0).at(6);
    std::filesystem::resize_file(path, cut);
    auto reader = source.Open(0, ranged ? ByteRange{0, size} : ByteRange{});
    Element e;
    int read = 0;
    try {
      while (reader->Next(&e)) ++read;
      FAIL() << "the truncated file just ended";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), ErrorCode::kDataLoss) << err.what();
      EXPECT_EQ(err.context().file, path);
      EXPECT_NE(std::string(err.what()).find("truncated or replaced during the run"),
                std::string::npos)
          << err.what();
    }
    EXPECT_EQ(read, 6);
    WriteExamples(path, 0, 10);  // whole again for the next round
  }
}

TEST(TFRecordSource, PositionAndSeekResumeExactly) {
  shardflow::testing::ScratchDir dir("tfsource-seek");
  WriteExamples((dir / "a.tfrecord").string(), 0, 10);
  for (bool ranged : {false, true}) {
    TFRecordSource source({(dir / "a.tfrecord").string()});
    ByteRange range;
    if (ranged) range = {1, source.Files()[0].size_bytes};  // from record 1 on
    auto reader = source.Open(0, range);
    Element e;
    std::vector<uint64_t> offsets;
    std::vector<int64_t> records;
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(reader->Next(&e));
    const ReaderPosition pos = reader->Position();
    while (reader->Next(&e)) {
      offsets.push_back(e.where.offset);
      records.push_back(e.where.record);
    }
    auto again = source.Open(0, range);
    again->Seek(pos);
    std::vector<uint64_t> offsets2;
    std::vector<int64_t> records2;
    while (again->Next(&e)) {
      offsets2.push_back(e.where.offset);
      records2.push_back(e.where.record);
    }
    EXPECT_EQ(offsets2, offsets);
    EXPECT_EQ(records2, records);
    EXPECT_EQ(offsets.size(), ranged ? 6u : 7u);
    if (!ranged) {
      EXPECT_EQ(records.front(), 3);
    }
    EXPECT_EQ(source.RecordOffsets(0).size(), 10u);
  }
}

TEST(InputPipeline, SaveAndRestoreStateResumesTheSameBatches) {
  shardflow::testing::ScratchDir dir("tfsource-state");
  WriteExamples((dir / "a.tfrecord").string(), 0, 37);
  WriteExamples((dir / "b.tfrecord").string(), 37, 23);
  InputSpec spec;
  spec.data.files = {(dir / "*.tfrecord").string()};
  spec.features = {"id:int64:int64:scalar", "label:int64:1"};
  spec.data.batch_size = 4;
  spec.data.shuffle_buffer = 16;
  spec.data.parallel_calls = 2;
  spec.data.parallel_reads = 2;
  const Dataset ds = BuildInputPipeline(spec, 0, 1);
  PipelineIterator it = ds.MakeIterator();
  Element e;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(it.Next(&e));
  const std::string blob = it.SaveState();
  std::vector<int64_t> rest;
  while (it.Next(&e)) {
    for (int64_t i = 0; i < e.Get("id").dim(0); ++i) rest.push_back(e.Get("id").data<int64_t>()[i]);
  }
  PipelineIterator resumed = ds.MakeIterator();
  resumed.RestoreState(blob);
  std::vector<int64_t> rest2;
  while (resumed.Next(&e)) {
    for (int64_t i = 0; i < e.Get("id").dim(0); ++i)
      rest2.push_back(e.Get("id").data<int64_t>()[i]);
  }
  EXPECT_EQ(rest2, rest);
  EXPECT_EQ(rest.size(), 40u);
  EXPECT_EQ(CountLocalBatches(spec, 0, 1), 15);
}

TEST(InputPipeline, CsvRowsShardedByBytesAreReadOnce) {
  shardflow::testing::ScratchDir dir("csv-source");
  for (int f = 0; f < 2; ++f) {
    std::ofstream out(dir / ("t" + std::to_string(f) + ".csv"));
    out << "x,id,name\n";
    for (int i = 0; i < 11 + f * 6; ++i) out << (i * 0.5) << "," << (f * 100 + i) << ",n\n";
  }
  std::vector<int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    InputSpec spec;
    spec.data.format = "csv";
    spec.data.files = {(dir / "*.csv").string()};
    spec.features = {"id:int64:scalar", "x:float32:1"};
    spec.data.shard_policy = ShardPolicy::kByteRange;
    spec.data.batch_size = 5;
    const std::vector<int64_t> ids = Ids(BuildInputPipeline(spec, rank, 3));
    EXPECT_EQ(static_cast<int64_t>(ids.size()), CountLocalRecords(spec, rank, 3));
    all.insert(all.end(), ids.begin(), ids.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int64_t> want;
  for (int i = 0; i < 11; ++i) want.push_back(i);
  for (int i = 0; i < 17; ++i) want.push_back(100 + i);
  EXPECT_EQ(all, want);
}

TEST(InputPipeline, IdxImagesAndLabels) {
  shardflow::testing::ScratchDir dir("idx-source");
  Tensor images(DType::kUInt8, {7, 2, 3});
  Tensor labels(DType::kUInt8, {7});
  for (int64_t i = 0; i < images.num_elements(); ++i) images.data<uint8_t>()[i] = i % 251;
  for (int64_t i = 0; i < 7; ++i) labels.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  io::WriteIdx((dir / "t-images-idx3-ubyte").string(), images, false);
  io::WriteIdx((dir / "t-labels-idx1-ubyte.gz").string(), labels, true);
  // The labels file has another suffix: not found beside the images file.
  InputSpec spec;
  spec.data.format = "idx";
  spec.data.files = {(dir / "t-*").string()};
  spec.features = {"image:uint8:2x3x1", "label:int64:scalar"};
  spec.data.batch_size = 3;
  spec.data.shuffle_buffer = 0;
  EXPECT_THAT(ErrorText([&] { BuildInputPipeline(spec, 0, 1); }), HasSubstr("t-labels-idx1-ubyte"));
  io::WriteIdx((dir / "t-labels-idx1-ubyte").string(), labels, false);
  std::filesystem::remove(dir / "t-labels-idx1-ubyte.gz");
  PipelineIterator it = BuildInputPipeline(spec, 0, 1).MakeIterator();
  Element e;
  int64_t label_sum = 0, pixel_sum = 0, rows = 0;
  while (it.Next(&e)) {
    EXPECT_EQ(e.Get("image").shape(), (Shape{e.Get("label").dim(0), 2, 3, 1}));
    for (int64_t i = 0; i < e.Get("label").dim(0); ++i)
      label_sum += e.Get("label").data<int64_t>()[i];
    for (int64_t i = 0; i < e.Get("image").num_elements(); ++i) {
      pixel_sum += e.Get("image").data<uint8_t>()[i];
    }
    rows += e.Get("label").dim(0);
  }
  EXPECT_EQ(rows, 7);
  EXPECT_EQ(label_sum, 21);
  EXPECT_EQ(pixel_sum, 41 * 42 / 2);
  EXPECT_EQ(CountLocalBatches(spec, 0, 1), 3);
}

TEST(InputPipeline, ImageFeaturesAreDecodedToTheSchemaShape) {
  shardflow::testing::ScratchDir dir("image-feature");
  {
    io::TFRecordWriter w((dir / "img.tfrecord").string());
    for (int64_t id = 0; id < 5; ++id) {
      Tensor img(DType::kUInt8, {6, 4, 1});
      for (int64_t i = 0; i < 24; ++i) img.data<uint8_t>()[i] = static_cast<uint8_t>(id * 40);
      io::ExampleBuilder b;
      b.AddBytes("image_raw", {EncodePng(img)}).AddInt64("id", {id});
      w.Write(b.Serialize());
    }
    w.Close();
  }
  InputSpec spec;
  spec.data.files = {(dir / "img.tfrecord").string()};
  spec.features = {"image_raw:image:uint8:6x4x1", "id:int64:int64:scalar"};
  spec.data.batch_size = 2;
  spec.data.shuffle_buffer = 0;
  PipelineIterator it = BuildInputPipeline(spec, 0, 1).MakeIterator();
  Element e;
  int64_t rows = 0;
  while (it.Next(&e)) {
    ASSERT_EQ(e.features[0].first, "image_raw");
    const Tensor& img = e.Get("image_raw");
    EXPECT_EQ(img.shape(), (Shape{e.Get("id").dim(0), 6, 4, 1}));
    for (int64_t r = 0; r < img.dim(0); ++r) {
      EXPECT_EQ(img.data<uint8_t>()[r * 24 + 5], e.Get("id").data<int64_t>()[r] * 40);
    }
    rows += img.dim(0);
  }
  EXPECT_EQ(rows, 5);
  spec.features = {"image_raw:image:uint8:4x4x1"};
  const std::string what = ErrorText([&] {
    PipelineIterator bad = BuildInputPipeline(spec, 0, 1).MakeIterator();
    while (bad.Next(&e)) {
    }
  });
  EXPECT_THAT(what, HasSubstr("image_raw"));
  EXPECT_THAT(what, HasSubstr("record="));  // which row of the batch fails first may vary
  EXPECT_THAT(what, HasSubstr("decode"));
  EXPECT_THAT(what, HasSubstr("img.tfrecord"));
}

TEST(OpenRecordSource, UnknownFormatNamesTheKey) {
  const std::string what = ErrorText([] { OpenRecordSource("parquet", {}, {}); });
  EXPECT_THAT(what, HasSubstr("parquet"));
  EXPECT_THAT(what, HasSubstr("key=format"));
}

TEST(RegisterDataOptions, ParsesEveryKeyAndResolvesAuto) {
  ConfigSchema schema;
  InputSpec train, eval;
  RegisterDataOptions(schema, "data", &train);
  RegisterDataOptions(schema, "eval", &eval);
  schema.ParseString(
      "[data]\nfiles = a/*.tfrecord, b/*.tfrecord\nformat = tfrecord\ncompression = gzip\n"
      "on_corrupt = skip\nfeatures = image_raw:bytes:uint8:28x28x1, label:int64:1\n"
      "shard_policy = byte_range\nshuffle_buffer = 100\nshuffle_buffer_bytes = 4096\n"
      "parallel_reads = 3\nparallel_calls = auto\nprefetch = 0\ncache = memory\n"
      "deterministic = false\nseed = 9\naugmentations = random_flip, scale:0.5\n"
      "image_feature = image_raw\nbatch_size = 64\ndrop_remainder = true\n"
      "[eval]\nfiles = e/*.tfrecord\nfeatures = label:int64:1\n",
      "exp.ini");
  EXPECT_EQ(train.data.files.size(), 2u);
  EXPECT_EQ(train.compression, "gzip");
  EXPECT_EQ(train.on_corrupt, "skip");
  EXPECT_EQ(train.features.size(), 2u);
  EXPECT_EQ(train.data.shard_policy, ShardPolicy::kByteRange);
  EXPECT_EQ(train.data.parallel_reads, 3);
  EXPECT_EQ(train.data.parallel_calls, kAutotune);
  EXPECT_EQ(train.data.prefetch, 0);
  EXPECT_EQ(train.data.cache, "memory");
  EXPECT_FALSE(train.data.deterministic);
  EXPECT_EQ(train.data.seed, 9u);
  EXPECT_EQ(train.data.augmentations.size(), 2u);
  EXPECT_EQ(train.data.batch_size, 64);
  EXPECT_TRUE(train.data.drop_remainder);
  EXPECT_EQ(eval.data.files, std::vector<std::string>{"e/*.tfrecord"});
  EXPECT_EQ(eval.section, "eval");
}

TEST(RegisterDataOptions, BadValuesNameTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"parallel_calls = -3", "data.parallel_calls"},
      {"parallel_reads = 0", "data.parallel_reads"},
      {"format = parquet", "data.format"},
      {"features = image:bytes:uint8:0", "data.features"},
      {"augmentations = sharpen", "data.augmentations"},
      {"batch_size = 0", "data.batch_size"},
      {"shard_policy = rows", "data.shard_policy"},
      {"on_corrupt = ignore", "data.on_corrupt"},
  };
  // Named references, not a structured binding: clang 14 (the ThreadSanitizer build) cannot
  // capture a structured binding in a lambda.
  for (const auto& c : cases) {
    const std::string& line = c.first;
    const std::string& key = c.second;
    ConfigSchema schema;
    InputSpec spec;
    RegisterDataOptions(schema, "data", &spec);
    const std::string what =
        ErrorText([&] { schema.ParseString("[data]\nfiles = x\n" + line + "\n", "exp.ini"); });
    EXPECT_THAT(what, HasSubstr(key)) << line;
  }
  // files is required in [data].
  ConfigSchema schema;
  InputSpec spec;
  RegisterDataOptions(schema, "data", &spec);
  EXPECT_THAT(ErrorText([&] { schema.ParseString("[data]\nbatch_size = 2\n", "exp.ini"); }),
              HasSubstr("data.files"));
}

}  // namespace pipeline_sources_test
}  // namespace shardflow::pipeline
