// FixedLengthRecordSource (CIFAR-10 layout, header/footer, byte ranges on record boundaries,
// partial tails) and JsonLinesSource (schema typing, exactly-once, every bad-input case naming
// file, line and field; skip-and-count).
#include <gtest/gtest.h>

#include "io/pipeline/fixed_length_source.hpp"
#include "io/pipeline/sources/json_lines_source.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace source_fixed_json_test {

using testing::Drain;
using testing::ErrorText;
using testing::ExpectHas;
using testing::FeatureText;
using testing::ReadAllRanks;
using testing::WriteFile;

constexpr uint64_t kCifarRecord = 1 + 32 * 32 * 3;  // label byte + 3072 pixel bytes

// A CIFAR-10-like batch file of `n` records with a 5-byte header and 3-byte footer; record i's
// label byte is (i % 10) and its pixels start with the file/record number.
std::string CifarLike(int file, int n) {
  std::string text = "HEAD!";
  for (int i = 0; i < n; ++i) {
    std::string r(kCifarRecord, static_cast<char>(i % 251));
    r[0] = static_cast<char>(i % 10);
    const std::string tag = std::to_string(file) + ":" + std::to_string(i);
    r.replace(1, tag.size(), tag);
    text += r;
  }
  return text + "END";
}

TEST(FixedLengthSource, CifarLayoutExactlyOnceEveryPolicy) {
  shardflow::testing::ScratchDir dir("fixed_cifar");
  std::vector<std::string> files;
  std::multiset<std::string> expected;
  const int counts[5] = {0, 1, 97, 13, 200};  // 311 records, an empty body among them
  for (int f = 0; f < 5; ++f) {
    files.push_back((dir / ("data_batch_" + std::to_string(f) + ".bin")).string());
    WriteFile(files.back(), CifarLike(f, counts[f]));
  }
  auto source = OpenFixedLengthSource(
      files, {.record_bytes = kCifarRecord, .header_bytes = 5, .footer_bytes = 3});
  auto key = [](const Element& e) {
    std::string r = FeatureText(e, "bytes");
    EXPECT_EQ(static_cast<uint8_t>(r[0]), e.where.record % 10) << "label byte misplaced";
    return std::to_string(e.where.file_index) + ":" + std::to_string(e.where.record) + "@" +
           std::to_string(e.where.offset);
  };
  for (int f = 0; f < 5; ++f) {
    for (int i = 0; i < counts[f]; ++i) {
      expected.insert(std::to_string(f) + ":" + std::to_string(i) + "@" +
                      std::to_string(5 + i * kCifarRecord));
    }
  }
  for (ShardPolicy policy : {ShardPolicy::kFile, ShardPolicy::kRecord, ShardPolicy::kByteRange}) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      EXPECT_TRUE(ReadAllRanks(source, policy, ranks, key) == expected)
          << ShardPolicyName(policy) << " ranks=" << ranks;
    }
  }
  // Byte ranges cut anywhere land on record boundaries: every cut of file 3 splits it exactly.
  for (uint64_t cut = 0; cut <= source->Files()[3].size_bytes; cut += 97) {
    int64_t n = 0;
    for (ByteRange r : {ByteRange{0, cut}, ByteRange{cut, ByteRange().end}}) {
      auto reader = source->Open(3, r);
      Element e;
      while (reader->Next(&e)) {
        EXPECT_EQ(e.where.record, n++) << "cut=" << cut;
        EXPECT_EQ((e.where.offset - 5) % kCifarRecord, 0u);
      }
    }
    EXPECT_EQ(n, 13) << "cut=" << cut;
  }
}

TEST(FixedLengthSource, PartialTailFailsNamingFileAndSizeOrIsDroppedAndCounted) {
  shardflow::testing::ScratchDir dir("fixed_tail");
  const std::string path = (dir / "odd.bin").string();
  WriteFile(path, std::string(2 + 3 * 8 + 5, 'z'));  // header 2, three records of 8, 5 extra
  ErrorCode code{};
  const std::string text = ErrorText(
      [&] { FixedLengthRecordSource({path}, {.record_bytes = 8, .header_bytes = 2}); }, &code);
  EXPECT_EQ(code, ErrorCode::kDataLoss);
  ExpectHas(text, "odd.bin");
  ExpectHas(text, "31 bytes");
  ExpectHas(text, "record=3");
  ExpectHas(text, "5 bytes left over");
  FixedLengthRecordSource dropping({path},
                                   {.record_bytes = 8, .header_bytes = 2, .tail = OnError::kSkip});
  EXPECT_EQ(dropping.counters().dropped_bytes.load(), 5);
  EXPECT_EQ(dropping.Files()[0].num_records, 3);
  auto reader = dropping.Open(0, {});
  Element e;
  int n = 0;
  while (reader->Next(&e)) ++n;
  EXPECT_EQ(n, 3);
  // Shorter than header + footer; record_bytes 0.
  ExpectHas(ErrorText([&] {
              FixedLengthRecordSource({path},
                                      {.record_bytes = 8, .header_bytes = 20, .footer_bytes = 20});
            }),
            "shorter than header");
  ExpectHas(ErrorText([&] { FixedLengthRecordSource({path}, {.record_bytes = 0}); }),
            "record_bytes");
}

// ---- JSON lines ----

std::string JsonKey(const Element& e) {
  return std::to_string(*e.Get("id").data<int64_t>()) + "|" + FeatureText(e, "text");
}

TEST(JsonLinesSource, TypesArraysAndIgnoredFields) {
  shardflow::testing::ScratchDir dir("jsonl_types");
  const std::string path = (dir / "t.jsonl").string();
  WriteFile(
      path,
      "{\"id\": 7, \"score\": 2.5, \"text\": \"h\\u00e9\\n\", \"emb\": [1, 2.5, -3], "
      "\"extra\": {\"x\": 1}}\r\n\n  \n{\"emb\":[0,0,0],\"text\":\"\",\"score\":3,\"id\":-9}");
  JsonLinesSource source({path}, {.schema = ParseJsonSchema("id:int64, score:float32, text:bytes, "
                                                            "emb:float32[3]")});
  auto reader = source.Open(0, {});
  Element e;
  ASSERT_TRUE(reader->Next(&e));
  EXPECT_EQ(*e.Get("id").data<int64_t>(), 7);
  EXPECT_EQ(e.Get("id").shape(), Shape{});
  EXPECT_FLOAT_EQ(*e.Get("score").data<float>(), 2.5f);
  EXPECT_EQ(FeatureText(e, "text"), "h\xc3\xa9\n");
  EXPECT_EQ(e.Get("emb").shape(), Shape{3});
  EXPECT_FLOAT_EQ(e.Get("emb").data<float>()[2], -3.0f);
  EXPECT_EQ(e.where.record, 0);
  ASSERT_TRUE(reader->Next(&e));  // blank lines skipped
  EXPECT_EQ(*e.Get("id").data<int64_t>(), -9);
  EXPECT_FLOAT_EQ(*e.Get("score").data<float>(), 3.0f);
  EXPECT_EQ(e.where.record, 3);
  EXPECT_FALSE(reader->Next(&e));
  EXPECT_EQ(source.counters().skipped_records.load(), 0);
}

// int64[*]: a list of any length (empty included), the form data.assemble's ids= takes.
TEST(JsonLinesSource, ListsOfAnyLength) {
  shardflow::testing::ScratchDir dir("jsonl_lists");
  const std::string path = (dir / "t.jsonl").string();
  WriteFile(path, "{\"tags\": [9]}\n{\"tags\": []}\n{\"tags\": [7, 7, 6]}\n{\"tags\": 3}\n");
  JsonLinesSource source({path}, {.schema = ParseJsonSchema("tags:int64[*]")});
  auto reader = source.Open(0, {});
  Element e;
  for (const std::vector<int64_t>& want :
       {std::vector<int64_t>{9}, std::vector<int64_t>{}, std::vector<int64_t>{7, 7, 6}}) {
    ASSERT_TRUE(reader->Next(&e));
    const Tensor& t = e.Get("tags");
    EXPECT_EQ(t.shape(), Shape{static_cast<int64_t>(want.size())});
    EXPECT_EQ(std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.num_elements()), want);
  }
  ExpectHas(ErrorText([&] { reader->Next(&e); }), "expected an array of numbers");
}

TEST(JsonLinesSource, ExactlyOnceEveryPolicyOneToFourRanks) {
  shardflow::testing::ScratchDir dir("jsonl_once");
  std::vector<std::string> files;
  std::multiset<std::string> expected;
  const int counts[7] = {0, 1, 150, 200, 250, 200, 200};  // 1001 objects
  int id = 0;
  for (int f = 0; f < 7; ++f) {
    std::string text;
    for (int i = 0; i < counts[f]; ++i, ++id) {
      std::string t(static_cast<size_t>(i % 17 + 1), 'q');
      t[0] = 't';
      text +=
          "{\"id\":" + std::to_string(id) + ",\"text\":\"" + t + "\"}" + (f == 3 ? "\r\n" : "\n");
      expected.insert(std::to_string(id) + "|" + t);
    }
    if (f == 2) text.pop_back();
    files.push_back((dir / ("p" + std::to_string(f) + ".jsonl")).string());
    WriteFile(files.back(), text);
  }
  auto source = OpenJsonLinesSource(files, {.schema = ParseJsonSchema("id:int64,text:bytes")});
  for (ShardPolicy policy : {ShardPolicy::kFile, ShardPolicy::kRecord, ShardPolicy::kByteRange}) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      EXPECT_TRUE(ReadAllRanks(source, policy, ranks, JsonKey) == expected)
          << ShardPolicyName(policy) << " ranks=" << ranks;
    }
  }
}

struct BadCase {
  const char* line;
  const char* field;  // "" for line-level errors
  const char* what;
};

TEST(JsonLinesSource, EveryBadLineNamesFileLineAndFieldOrIsSkippedAndCounted) {
  shardflow::testing::ScratchDir dir("jsonl_bad");
  const BadCase cases[] = {
      {"{\"id\": 1, \"v\": [1,2], \"s\": \"x\"", "", "malformed JSON"},
      {"[1, 2, 3]", "", "not a JSON object"},
      {"{\"v\": [1,2], \"s\": \"x\"}", "id", "missing field"},
      {"{\"id\": 1.5, \"v\": [1,2], \"s\": \"x\"}", "id", "expected an integer"},
      {"{\"id\": \"1\", \"v\": [1,2], \"s\": \"x\"}", "id", "expected an integer"},
      {"{\"id\": 1, \"v\": [1,2,3], \"s\": \"x\"}", "v", "expected 2 numbers, got 3"},
      {"{\"id\": 1, \"v\": 4, \"s\": \"x\"}", "v", "expected an array"},
      {"{\"id\": 1, \"v\": [1,\"a\"], \"s\": \"x\"}", "v", "expected a number array element"},
      {"{\"id\": 1, \"v\": [1,2], \"s\": 5}", "s", "expected a string"},
  };
  const std::string good = "{\"id\": 1, \"v\": [1,2], \"s\": \"x\"}";
  const auto schema = ParseJsonSchema("id:int64, v:float32[2], s:bytes");
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.line);
    const std::string path = (dir / "bad.jsonl").string();
    WriteFile(path, good + "\n" + good + "\n" + c.line + "\n" + good + "\n");  // bad = line 3
    JsonLinesSource failing({path}, {.schema = schema});
    ErrorCode code{};
    const std::string text = ErrorText(
        [&] {
          auto r = failing.Open(0, {});
          Element e;
          while (r->Next(&e)) {
          }
        },
        &code);
    EXPECT_EQ(code, ErrorCode::kDataLoss);
    ExpectHas(text, "bad.jsonl");
    ExpectHas(text, "line 3");
    ExpectHas(text, c.what);
    if (*c.field) ExpectHas(text, std::string("field '") + c.field + "'");
    JsonLinesSource skipping({path}, {.schema = schema, .on_error = OnError::kSkip});
    auto r = skipping.Open(0, {});
    Element e;
    int n = 0;
    while (r->Next(&e)) ++n;
    EXPECT_EQ(n, 3);
    EXPECT_EQ(skipping.counters().skipped_records.load(), 1);
  }
}

TEST(JsonLinesSource, SchemaErrors) {
  for (const char* bad :
       {"id", "id:int32", "v:float32[0]", "v:float32[x]", "s:bytes[2]", "s:bytes[*]", ":int64"}) {
    ExpectHas(ErrorText([&] { ParseJsonSchema(bad); }), "schema");
  }
  EXPECT_THROW(JsonLinesSource({}, {}), Error);
  EXPECT_THROW(JsonLinesSource({}, {.schema = ParseJsonSchema("a:int64,a:bytes")}), Error);
  EXPECT_EQ(ParseJsonSchema(" a:int64 , b:float32[4] ,").size(), 2u);
}

}  // namespace source_fixed_json_test
}  // namespace shardflow::pipeline
