// [data] format = text | jsonl | fixed | images through RegisterDataOptions + BuildInputPipeline:
// every record exactly once over 1..4 simulated ranks, batch contents and shapes, the
// CountLocalRecords/Batches agreement, and a missing required key named per format.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace input_pipeline_formats_test {

using testing::Drain;
using testing::ErrorText;
using ::testing::HasSubstr;
using testing::WriteFile;

// Parses `body` (keys of [data]) into a spec; a few keys are fixed for light, stable tests.
InputSpec Parse(const std::string& body) {
  ConfigSchema schema;
  InputSpec spec;
  RegisterDataOptions(schema, "data", &spec);
  schema.ParseString("[data]\nparallel_calls = 0\nprefetch = 0\nepochs = 1\n" + body, "exp.ini");
  return spec;
}

// Rows of every batch of every rank, as key(batch, row), for world = 1..4; checks that each
// world reads the same multiset and CountLocalRecords/Batches match what each rank yields.
using RowKey = std::function<std::string(const Element& batch, int64_t row)>;
std::multiset<std::string> AllRows(const InputSpec& spec, const std::string& first_feature,
                                   const RowKey& key) {
  std::multiset<std::string> first;
  for (int world = 1; world <= 4; ++world) {
    std::multiset<std::string> rows;
    for (int rank = 0; rank < world; ++rank) {
      const std::vector<Element> batches = Drain(BuildInputPipeline(spec, rank, world));
      int64_t n = 0;
      for (const Element& b : batches) {
        const int64_t rows_in_batch = b.Get(first_feature).dim(0);
        EXPECT_LE(rows_in_batch, spec.data.batch_size);
        for (int64_t r = 0; r < rows_in_batch; ++r) rows.insert(key(b, r));
        n += rows_in_batch;
      }
      EXPECT_EQ(CountLocalRecords(spec, rank, world), n) << "rank " << rank << "/" << world;
      EXPECT_EQ(CountLocalBatches(spec, rank, world), static_cast<int64_t>(batches.size()));
    }
    if (world == 1) {
      first = rows;
    } else {
      EXPECT_EQ(rows, first) << "world " << world;
    }
  }
  return first;
}

// Bytes of row `r` of a uint8 batch tensor [B, n...].
std::string RowBytes(const Tensor& t, int64_t r, int64_t n) {
  const auto* p = t.data<uint8_t>() + r * (t.num_elements() / t.dim(0));
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
}

TEST(InputPipelineFormats, TextLinesPaddedWithLengths) {
  shardflow::testing::ScratchDir dir("formats_text");
  std::multiset<std::string> expected;
  const int counts[] = {5, 0, 8};
  for (int f = 0; f < 3; ++f) {
    std::string text = "header\n";
    for (int i = 0; i < counts[f]; ++i) {
      const std::string line = std::string("f") + std::to_string(f) + "-" + std::string(i, 'x');
      expected.insert(line);
      text += line + (i % 2 ? "\r\n" : "\n");
    }
    WriteFile((dir / (std::string("t") + std::to_string(f) + ".txt")).string(), text);
  }
  const InputSpec spec = Parse("files = " + (dir / "*.txt").string() +
                               "\nformat = text\nheader_lines = 1\nline_bytes = 12\n"
                               "batch_size = 3\n");
  const auto rows = AllRows(spec, "line", [](const Element& b, int64_t r) {
    EXPECT_EQ(b.Get("line").dim(1), 12);
    const int64_t n = b.Get("length").data<int64_t>()[r];
    const std::string padded = RowBytes(b.Get("line"), r, 12);
    EXPECT_EQ(padded.substr(static_cast<size_t>(n)), std::string(12 - n, '\0'));
    return padded.substr(0, static_cast<size_t>(n));
  });
  EXPECT_EQ(rows, expected);
}

TEST(InputPipelineFormats, TextLineLongerThanLineBytesFailsNamingFile) {
  shardflow::testing::ScratchDir dir("formats_text_long");
  WriteFile((dir / "a.txt").string(), "short\nthis line is far too long\n");
  const InputSpec spec = Parse("files = " + (dir / "a.txt").string() +
                               "\nformat = text\nline_bytes = 8\nbatch_size = 2\n");
  ErrorCode code{};
  const std::string what = ErrorText([&] { Drain(BuildInputPipeline(spec, 0, 1)); }, &code);
  EXPECT_EQ(code, ErrorCode::kDataLoss);
  EXPECT_THAT(what, HasSubstr("a.txt"));
  EXPECT_THAT(what, HasSubstr("line_bytes"));
}

TEST(InputPipelineFormats, JsonLinesTypedBatches) {
  shardflow::testing::ScratchDir dir("formats_jsonl");
  std::multiset<std::string> expected;
  int id = 0;
  for (int f = 0; f < 2; ++f) {
    std::string text;
    for (int i = 0; i < (f == 0 ? 7 : 4); ++i, ++id) {
      text += "{\"id\": " + std::to_string(id) + ", \"extra\": \"x\", \"emb\": [" +
              std::to_string(id) + ".5, " + std::to_string(-id) + "]}\n";
      expected.insert(std::to_string(id));
    }
    WriteFile((dir / (std::string("j") + std::to_string(f) + ".jsonl")).string(), text);
  }
  const InputSpec spec = Parse("files = " + (dir / "*.jsonl").string() +
                               "\nformat = jsonl\njson_schema = id:int64, emb:float32[2]\n"
                               "batch_size = 4\n");
  const auto rows = AllRows(spec, "id", [](const Element& b, int64_t r) {
    const int64_t v = b.Get("id").data<int64_t>()[r];
    const Tensor& emb = b.Get("emb");
    EXPECT_EQ(emb.shape(), (Shape{b.Get("id").dim(0), 2}));
    EXPECT_FLOAT_EQ(emb.data<float>()[2 * r], static_cast<float>(v) + 0.5f);
    EXPECT_FLOAT_EQ(emb.data<float>()[2 * r + 1], static_cast<float>(-v));
    return std::to_string(v);
  });
  EXPECT_EQ(rows, expected);
}

TEST(InputPipelineFormats, FixedLengthRecordsWithHeaderFooterAndSkippedTail) {
  shardflow::testing::ScratchDir dir("formats_fixed");
  std::multiset<std::string> expected;
  int tag = 0;
  for (int f = 0; f < 3; ++f) {
    std::string body = "HEAD";
    for (int i = 0; i < 2 + 3 * f; ++i, ++tag) {
      const std::string rec(3, static_cast<char>('A' + tag));
      body += rec;
      expected.insert(rec);
    }
    if (f == 1) body += "zz";  // partial record: dropped with tail = skip
    body += "FT";
    WriteFile((dir / (std::string("r") + std::to_string(f) + ".bin")).string(), body);
  }
  const InputSpec spec = Parse("files = " + (dir / "*.bin").string() +
                               "\nformat = fixed\nrecord_bytes = 3\nheader_bytes = 4\n"
                               "footer_bytes = 2\ntail = skip\nbatch_size = 4\n");
  const auto rows = AllRows(spec, "bytes", [](const Element& b, int64_t r) {
    EXPECT_EQ(b.Get("bytes").dim(1), 3);
    return RowBytes(b.Get("bytes"), r, 3);
  });
  EXPECT_EQ(rows, expected);
}

TEST(InputPipelineFormats, ImageFolderImagesAndLabels) {
  shardflow::testing::ScratchDir dir("formats_images");
  std::multiset<std::string> expected;
  int tag = 0;
  int label = 0;
  for (auto [cls, n] : {std::pair{"cat", 3}, std::pair{"dog", 4}}) {
    std::filesystem::create_directories(dir / "root" / cls);
    for (int i = 0; i < n; ++i, ++tag) {
      Tensor img(DType::kUInt8, {4, 5, 3});
      for (int64_t k = 0; k < img.num_elements(); ++k)
        img.data<uint8_t>()[k] = static_cast<uint8_t>(k * 3);
      img.data<uint8_t>()[0] = static_cast<uint8_t>(tag);
      WriteFile((dir / "root" / cls / (std::string("i") + std::to_string(i) + ".png")).string(),
                EncodePng(img));
      expected.insert(std::to_string(label) + "/" + std::to_string(tag));
    }
    ++label;
  }
  const InputSpec spec =
      Parse("format = images\nroot = " + (dir / "root").string() +
            "\nlabel_map = " + (dir / "labels.csv").string() + "\nbatch_size = 3\n");
  const auto rows = AllRows(spec, "label", [](const Element& b, int64_t r) {
    const Tensor& image = b.Get("image");
    EXPECT_EQ(image.shape(), (Shape{b.Get("label").dim(0), 4, 5, 3}));
    return std::to_string(b.Get("label").data<int64_t>()[r]) + "/" +
           std::to_string(image.data<uint8_t>()[r * 60]);
  });
  EXPECT_EQ(rows, expected);
  std::ifstream in(dir / "labels.csv");
  std::string map((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(map, "0,cat\n1,dog\n");
}

TEST(InputPipelineFormats, MissingRequiredKeyIsNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"files = x\nformat = text\n", "data.line_bytes"},
      {"files = x\nformat = jsonl\n", "data.json_schema"},
      {"files = x\nformat = fixed\n", "data.record_bytes"},
      {"format = images\n", "data.root"},
      {"format = images\nroot = a\nlist = b\n", "data.list"},
      {"format = csv\n", "data.files"},
  };
  // Named references, not a structured binding: clang 14 (the ThreadSanitizer build) cannot
  // capture a structured binding in a lambda.
  for (const auto& c : cases) {
    const std::string& body = c.first;
    const std::string& key = c.second;
    const std::string what = ErrorText([&] { Parse(body); });
    EXPECT_THAT(what, HasSubstr(key)) << body;
  }
  // A malformed schema is refused while parsing, naming its key.
  EXPECT_THAT(ErrorText([&] { Parse("files = x\nformat = jsonl\njson_schema = id:int32\n"); }),
              HasSubstr("data.json_schema"));
}

}  // namespace input_pipeline_formats_test
}  // namespace shardflow::pipeline
