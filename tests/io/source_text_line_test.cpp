// TextLineSource: exactly-once over 1-4 simulated ranks for every shard policy (byte ranges cut
// anywhere), line rules (CRLF, last line without newline, empty files/lines, long lines),
// headers, GZIP, line numbers, resume, determinism and errors.
#include <gtest/gtest.h>

#include <map>

#include "io/compression.hpp"
#include "io/pipeline/sources/text_line_source.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace source_text_line_test {

using testing::Drain;
using testing::ExpectHas;
using testing::FeatureText;
using testing::ReadAllRanks;
using testing::WriteFile;

// The naive twin of LineCursor: split the whole text at '\n', drop a '\r' before it, keep a last
// line without newline, skip `header` lines.
std::vector<std::string> NaiveLines(const std::string& text, int64_t header = 0) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (nl != std::string::npos && !line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  if (static_cast<int64_t>(lines.size()) <= header) return {};
  return {lines.begin() + header, lines.end()};
}

// 1001 lines in 7 files: empty, one line, no trailing newline, CRLF, empty lines, long lines.
struct Corpus {
  std::vector<std::string> files;
  std::vector<std::string> texts;
};

Corpus MakeCorpus(const shardflow::testing::ScratchDir& dir) {
  Corpus c;
  const int counts[7] = {0, 1, 150, 200, 250, 200, 200};
  for (int f = 0; f < 7; ++f) {
    std::string text;
    for (int i = 0; i < counts[f]; ++i) {
      std::string line = std::to_string(f) + ":" + std::to_string(i);
      if (f == 4 && i % 10 == 3) line.clear();                         // empty lines
      if (f == 5 && i % 50 == 7) line += std::string(10000 + i, 'x');  // > the read buffer
      text += line + (f == 3 ? "\r\n" : "\n");
    }
    if (f == 2) text.pop_back();  // no trailing newline
    c.files.push_back((dir / ("part-" + std::to_string(f) + ".txt")).string());
    WriteFile(c.files.back(), text);
    c.texts.push_back(text);
  }
  return c;
}

std::string Key(const Element& e) {
  return std::to_string(e.where.file_index) + "|" + FeatureText(e, "line");
}

std::multiset<std::string> Expected(const Corpus& c, int64_t header = 0) {
  std::multiset<std::string> all;
  for (size_t f = 0; f < c.texts.size(); ++f) {
    for (const auto& line : NaiveLines(c.texts[f], header))
      all.insert(std::to_string(f) + "|" + line);
  }
  return all;
}

TEST(TextLineSource, ExactlyOnceEveryPolicyOneToFourRanks) {
  shardflow::testing::ScratchDir dir("text_lines_once");
  Corpus c = MakeCorpus(dir);
  auto source = OpenTextLineSource(c.files, {.read_buffer_bytes = 4096});
  const auto expected = Expected(c);
  ASSERT_EQ(expected.size(), 1001u);
  for (ShardPolicy policy :
       {ShardPolicy::kFile, ShardPolicy::kRecord, ShardPolicy::kByteRange, ShardPolicy::kAuto}) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      SCOPED_TRACE(std::string(ShardPolicyName(policy)) + " ranks=" + std::to_string(ranks));
      EXPECT_TRUE(ReadAllRanks(source, policy, ranks, Key) == expected);
    }
  }
  // Parallel interleaved reads deliver the same set.
  EXPECT_TRUE(ReadAllRanks(source, ShardPolicy::kByteRange, 3, Key,
                           {.cycle_length = 3, .num_parallel_reads = 3}) == expected);
}

// Every cut point of a two-range split gives every line exactly once (a line belongs to the
// range holding its first byte), with and without a header, LF and CRLF.
TEST(TextLineSource, ByteRangeCutAnywhere) {
  shardflow::testing::ScratchDir dir("text_lines_cut");
  for (const std::string& text : {std::string("a\nbb\n\nccc\r\nd"), std::string("\n\nx\n"),
                                  std::string("one"), std::string("l1\r\nl2\r\nl3\r\n")}) {
    const std::string path = (dir / "cut.txt").string();
    WriteFile(path, text);
    for (int64_t header : {0, 1, 2}) {
      TextLineSource source({path}, {.header_lines = header});
      const auto want = NaiveLines(text, header);
      for (uint64_t cut = 0; cut <= text.size() + 1; ++cut) {
        std::vector<std::string> got;
        for (ByteRange r : {ByteRange{0, cut}, ByteRange{cut, ByteRange().end}}) {
          auto reader = source.Open(0, r);
          Element e;
          while (reader->Next(&e)) {
            got.push_back(FeatureText(e, "line"));
            EXPECT_GE(e.where.offset, r.begin);
            EXPECT_LT(e.where.offset, r.end);
          }
        }
        EXPECT_EQ(got, want) << "cut=" << cut << " header=" << header << " text=" << text;
      }
    }
  }
}

TEST(TextLineSource, HeaderLinesSkippedInEveryFileAndRange) {
  shardflow::testing::ScratchDir dir("text_lines_header");
  Corpus c = MakeCorpus(dir);
  auto source = OpenTextLineSource(c.files, {.header_lines = 2});
  const auto expected = Expected(c, 2);
  for (ShardPolicy policy : {ShardPolicy::kFile, ShardPolicy::kByteRange}) {
    for (int ranks = 1; ranks <= 4; ++ranks) {
      EXPECT_TRUE(ReadAllRanks(source, policy, ranks, Key) == expected) << ranks;
    }
  }
}

TEST(TextLineSource, LineNumbersAndOffsets) {
  shardflow::testing::ScratchDir dir("text_lines_numbers");
  const std::string path = (dir / "n.txt").string();
  WriteFile(path, "h\nzero\r\none\n\nthree");
  TextLineSource source({path}, {.header_lines = 1});
  auto reader = source.Open(0, {});
  Element e;
  std::vector<std::pair<int64_t, uint64_t>> where;
  while (reader->Next(&e)) where.emplace_back(e.where.record, e.where.offset);
  EXPECT_EQ(where, (std::vector<std::pair<int64_t, uint64_t>>{{1, 2}, {2, 8}, {3, 12}, {4, 13}}));
  // Mid-file: unknown (-1) unless exact_line_numbers.
  auto mid = source.Open(0, {9, ByteRange().end});
  ASSERT_TRUE(mid->Next(&e));
  EXPECT_EQ(e.where.record, -1);
  EXPECT_EQ(e.where.offset, 12u);
  TextLineSource exact({path}, {.header_lines = 1, .exact_line_numbers = true});
  auto counted = exact.Open(0, {9, ByteRange().end});
  ASSERT_TRUE(counted->Next(&e));
  EXPECT_EQ(e.where.record, 3);
}

TEST(TextLineSource, GzipFilesReadWholeAndRefuseByteRanges) {
  shardflow::testing::ScratchDir dir("text_lines_gzip");
  Corpus c = MakeCorpus(dir);
  std::vector<std::string> gz;
  for (size_t f = 0; f < c.files.size(); ++f) {
    gz.push_back(c.files[f] + ".gz");
    io::DeflatingFile out(io::FileSystem::Default()->NewWritableFile(gz.back()),
                          io::Compression::kGzip);
    ThrowIfError(out.Append(c.texts[f]));
    ThrowIfError(out.Close());
  }
  auto source = OpenTextLineSource(gz);
  EXPECT_FALSE(source->SupportsByteRanges());
  for (int ranks = 1; ranks <= 4; ++ranks) {
    EXPECT_TRUE(ReadAllRanks(source, ShardPolicy::kRecord, ranks, Key) == Expected(c));
  }
  EXPECT_THROW(PlanShards(source->Files(), false, ShardPolicy::kByteRange, 2, 0), Error);
  ExpectHas(testing::ErrorText([&] { source->Open(2, {5, 9}); }), "part-2.txt.gz");
}

TEST(TextLineSource, DeterministicAndResumable) {
  shardflow::testing::ScratchDir dir("text_lines_resume");
  Corpus c = MakeCorpus(dir);
  auto source = OpenTextLineSource(c.files, {.read_buffer_bytes = 4096});
  ShardPlan plan = PlanShards(source->Files(), true, ShardPolicy::kByteRange, 3, 1);
  auto a = Drain(Dataset::FromRecordSource(source, plan));
  auto b =
      Drain(Dataset::FromRecordSource(source, plan, {.cycle_length = 2, .num_parallel_reads = 2}));
  auto c2 =
      Drain(Dataset::FromRecordSource(source, plan, {.cycle_length = 2, .num_parallel_reads = 2}));
  ASSERT_EQ(b.size(), c2.size());
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(Key(b[i]), Key(c2[i])) << i;
  EXPECT_EQ(a.size(), b.size());
  // Reader-level resume: Position() then Seek() on a fresh reader continues exactly.
  auto first = source->Open(5, {1000, 30000});
  Element e;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(first->Next(&e));
  const ReaderPosition pos = first->Position();
  std::vector<std::string> rest1, rest2;
  while (first->Next(&e)) rest1.push_back(FeatureText(e, "line"));
  auto second = source->Open(5, {1000, 30000});
  second->Seek(pos);
  while (second->Next(&e)) rest2.push_back(FeatureText(e, "line"));
  EXPECT_EQ(rest1, rest2);
  EXPECT_FALSE(rest1.empty());
  // Whole-pipeline resume through the iterator state.
  PipelineIterator it = Dataset::FromRecordSource(source, plan).MakeIterator();
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(it.Next(&e));
  const std::string state = it.SaveState();
  PipelineIterator resumed = Dataset::FromRecordSource(source, plan).MakeIterator();
  resumed.RestoreState(state);
  size_t n = 10;
  while (resumed.Next(&e)) {
    ASSERT_LT(n, a.size());
    EXPECT_EQ(Key(e), Key(a[n++]));
  }
  EXPECT_EQ(n, a.size());
}

TEST(TextLineSource, ErrorsNameTheFile) {
  shardflow::testing::ScratchDir dir("text_lines_errors");
  ErrorCode code{};
  const std::string missing = (dir / "missing.txt").string();
  ExpectHas(testing::ErrorText([&] { OpenTextLineSource({missing}); }, &code), "missing.txt");
  EXPECT_EQ(code, ErrorCode::kNotFound);
  EXPECT_THROW(OpenTextLineSource({}, {.header_lines = -1}), Error);
  // A damaged GZIP stream: kDataLoss naming the file.
  const std::string bad = (dir / "bad.txt.gz").string();
  WriteFile(bad, std::string("\x1f\x8b\x08\x00garbage-after-a-gzip-magic", 30));
  auto source = OpenTextLineSource({bad});
  ExpectHas(testing::ErrorText(
                [&] {
                  Element e;
                  auto r = source->Open(0, {});
                  while (r->Next(&e)) {
                  }
                },
                &code),
            "bad.txt.gz");
  EXPECT_EQ(code, ErrorCode::kDataLoss);
}

}  // namespace source_text_line_test
}  // namespace shardflow::pipeline
