// CsvStreamSource / CsvRecordStream conformance: quoting (delimiters, "" and line breaks inside
// quotes), CRLF, blank and comment lines, NA strings, defaults, bad numbers and wrong field counts
// named file:line:column, empty and header-only files, no header, tab delimiter, GZIP, records
// longer than the read-ahead, resume, and byte ranges: every cut point of a file, and 1..4
// simulated ranks over files with long and short lines, read every row exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "io/compression.hpp"
#include "io/csv.hpp"
#include "io/csv_stream.hpp"
#include "io/pipeline/sources/csv_stream_source.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace csv_stream_test {

using testing::Drain;
using testing::ErrorText;
using testing::ExpectHas;
using testing::FeatureText;
using testing::ReadAllRanks;
using testing::WriteFile;

CsvSourceOptions Options(const std::vector<std::string>& columns) {
  CsvSourceOptions o;
  o.columns = ParseCsvColumns(columns);
  o.dialect.read_ahead_bytes = 4096;
  return o;
}

// Every element of file 0 whose first byte lies in `range`.
std::vector<Element> ReadRange(const CsvStreamSource& source, ByteRange range = {}) {
  std::vector<Element> out;
  auto reader = source.Open(0, range);
  Element e;
  while (reader->Next(&e)) out.push_back(e);
  return out;
}

int64_t Int(const Element& e, const std::string& name) { return e.Get(name).data<int64_t>()[0]; }
float Float(const Element& e, const std::string& name) { return e.Get(name).data<float>()[0]; }

TEST(CsvStream, QuotingCrlfBlankAndCommentLines) {
  shardflow::testing::ScratchDir dir("csv-quoting");
  const std::string path = (dir / "t.csv").string();
  WriteFile(path,
            "\xEF\xBB\xBFid,text,x\r\n"
            "# a comment with a \" quote\r\n"
            "1,\"a, b\",1.5\r\n"
            "\r\n"
            "2,\"say \"\"hi\"\"\", -2\n"
            "\n"
            "3,\"two\nlines\",+3e1\n"
            "4,plain, 4 ");
  CsvSourceOptions o = Options({"id:int64", "text:string", "x:float32"});
  o.dialect.comment = '#';
  CsvStreamSource source({path}, o);
  const auto rows = ReadRange(source);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(FeatureText(rows[0], "text"), "a, b");
  EXPECT_EQ(FeatureText(rows[1], "text"), "say \"hi\"");
  EXPECT_EQ(FeatureText(rows[2], "text"), "two\nlines");
  EXPECT_EQ(FeatureText(rows[3], "text"), "plain");
  EXPECT_FLOAT_EQ(Float(rows[0], "x"), 1.5f);
  EXPECT_FLOAT_EQ(Float(rows[1], "x"), -2.f);
  EXPECT_FLOAT_EQ(Float(rows[2], "x"), 30.f);
  EXPECT_FLOAT_EQ(Float(rows[3], "x"), 4.f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(Int(rows[i], "id"), i + 1);
  // 0-based physical lines: the record after the two-line field starts on line 9 (1-based).
  EXPECT_EQ(rows[0].where.record, 2);
  EXPECT_EQ(rows[3].where.record, 8);
  EXPECT_EQ(rows[0].Get("id").shape(), Shape{});
}

TEST(CsvStream, MissingValuesTakeDefaultsOrNameFileLineColumn) {
  shardflow::testing::ScratchDir dir("csv-missing");
  const std::string path = (dir / "m.csv").string();
  WriteFile(path, "a,b,c\n1,,x\nNA,2,\n3,?,z\n");
  CsvSourceOptions o = Options({"a:int64=-1", "b:float64=0.5", "c:string=none"});
  o.na_values = {"NA", "?"};
  const auto rows = ReadRange(CsvStreamSource({path}, o));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(Int(rows[1], "a"), -1);
  EXPECT_DOUBLE_EQ(rows[0].Get("b").data<double>()[0], 0.5);
  EXPECT_DOUBLE_EQ(rows[2].Get("b").data<double>()[0], 0.5);
  EXPECT_EQ(FeatureText(rows[1], "c"), "none");
  // Without a default: the error names file:line:column and the column.
  CsvSourceOptions strict = Options({"a:int64", "b:float64"});
  strict.na_values = {"NA", "?"};
  ExpectHas(ErrorText([&] { ReadRange(CsvStreamSource({path}, strict)); }),
            "m.csv:2:2 (column 'b'): missing value and the column has no default");
  strict.columns = ParseCsvColumns({"a:int64=0", "c:string"});
  ExpectHas(ErrorText([&] { ReadRange(CsvStreamSource({path}, strict)); }),
            "m.csv:3:3 (column 'c'): missing value");
  // A default of the wrong type is refused up front.
  ExpectHas(ErrorText([] { ParseCsvColumns({"a:int64=1.5"}); }), "the default is not a int64");
}

TEST(CsvStream, BadNumbersAndFieldCountsNameTheLine) {
  shardflow::testing::ScratchDir dir("csv-bad");
  const std::string bad_number = (dir / "n.csv").string();
  WriteFile(bad_number, "x,y\n1,2\n3,1.5x\n");
  ErrorCode code{};
  ExpectHas(ErrorText(
                [&] {
                  ReadRange(CsvStreamSource({bad_number}, Options({"x:int64", "y:float32"})));
                },
                &code),
            "n.csv:3:2 (column 'y'): bad float32 value '1.5x'");
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);
  ExpectHas(ErrorText([&] {
              ReadRange(CsvStreamSource({bad_number}, Options({"x:int64", "y:int64"})));
            }),
            "bad int64 value '1.5x'");
  const std::string many = (dir / "many.csv").string();
  WriteFile(many, "x,y\n1,2\n3,4,5\n");
  ExpectHas(ErrorText([&] { ReadRange(CsvStreamSource({many}, Options({"x:int64"}))); }),
            "many.csv:3: 3 fields, expected 2");
  const std::string few = (dir / "few.csv").string();
  WriteFile(few, "x,y\n1\n");
  ExpectHas(ErrorText([&] { ReadRange(CsvStreamSource({few}, Options({"x:int64"}))); }),
            "few.csv:2: 1 fields, expected 2");
  const std::string open_quote = (dir / "q.csv").string();
  WriteFile(open_quote, "x,y\n1,\"never closed\n2,3\n");
  ExpectHas(
      ErrorText([&] { ReadRange(CsvStreamSource({open_quote}, Options({"x:int64"}))); }, &code),
      "q.csv:2:2: quoted field left open at the end of the file");
  EXPECT_EQ(code, ErrorCode::kDataLoss);
  const std::string stray = (dir / "s.csv").string();
  WriteFile(stray, "x,y\n1,a\"b\n");
  ExpectHas(ErrorText([&] { ReadRange(CsvStreamSource({stray}, Options({"x:int64"}))); }),
            "s.csv:2:2: quote inside an unquoted field");
  ExpectHas(ErrorText([&] { CsvStreamSource({stray}, Options({"z:int64"})); }),
            "no column 'z' in the CSV header");
}

TEST(CsvStream, EmptyHeaderOnlyNoHeaderTabAndGzip) {
  shardflow::testing::ScratchDir dir("csv-kinds");
  const std::string empty = (dir / "empty.csv").string();
  const std::string header_only = (dir / "header.csv").string();
  WriteFile(empty, "");
  WriteFile(header_only, "x,y\r\n");
  EXPECT_TRUE(ReadRange(CsvStreamSource({empty}, Options({"x:int64"}))).empty());
  EXPECT_TRUE(ReadRange(CsvStreamSource({header_only}, Options({"x:int64"}))).empty());
  const std::string tabbed = (dir / "t.tsv").string();
  WriteFile(tabbed, "5\t\"a\tb\"\n6\tc\n");
  CsvSourceOptions o = Options({"name:string", "n:int64"});
  o.header = false;
  o.column_names = {"n", "name"};
  o.dialect.delimiter = '\t';
  auto rows = ReadRange(CsvStreamSource({tabbed}, o));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(FeatureText(rows[0], "name"), "a\tb");
  EXPECT_EQ(Int(rows[1], "n"), 6);
  EXPECT_EQ(rows[0].features[0].first, "name");  // csv_columns order, not file order
  o.column_names.clear();
  ExpectHas(ErrorText([&] { CsvStreamSource({tabbed}, o); }), "needs column_names");
  for (auto kind : {io::Compression::kGzip, io::Compression::kZlib}) {
    const std::string gz =
        (dir / (kind == io::Compression::kGzip ? "z.csv.gz" : "z.csv.zlib")).string();
    io::DeflatingFile out(io::FileSystem::Default()->NewWritableFile(gz), kind);
    ThrowIfError(out.Append("x,y\n1,\"a\nb\"\n2,c\n"));
    ThrowIfError(out.Close());
    CsvStreamSource source({gz}, Options({"x:int64", "y:string"}));
    EXPECT_FALSE(source.SupportsByteRanges());
    rows = ReadRange(source);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(FeatureText(rows[0], "y"), "a\nb");
    ExpectHas(ErrorText([&] { source.Open(0, {5, 9}); }), "cannot be read from a byte offset");
  }
}

// A file of rows "id,text,x" with short and long lines (long ones beyond the 4 KiB read-ahead),
// quoted fields with delimiters, "" and (when `newlines`) line breaks, blank and comment lines.
std::string MakeTable(int first_id, int rows, bool newlines, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string text = "id,text,x\n";
  for (int i = 0; i < rows; ++i) {
    const int id = first_id + i;
    const uint32_t kind = rng() % 7;
    std::string field = "e";
    if (kind == 0) field = std::string(5000 + rng() % 3000, 'L');  // longer than the buffer
    if (kind == 1) field = "\"q,\"\"" + std::string(rng() % 40, 'a') + "\"\"\"";
    if (kind == 2) field = newlines ? "\"x\n,y\n\"" : "\"x,y\"";
    if (kind == 3) field = "s";
    text += std::to_string(id) + "," + field + "," + std::to_string(id % 10) + ".5";
    text += rng() % 3 == 0 ? "\r\n" : "\n";
    if (rng() % 11 == 0) text += "\n";
    if (rng() % 13 == 0) text += "# comment \"\n";
  }
  return text;
}

TEST(CsvStream, EveryCutPointReadsEveryRowOnce) {
  shardflow::testing::ScratchDir dir("csv-cuts");
  for (bool newlines : {true, false}) {
    const std::string path = (dir / (newlines ? "nl.csv" : "plain.csv")).string();
    const std::string text = MakeTable(0, 60, newlines, 7);
    WriteFile(path, text);
    CsvSourceOptions o = Options({"id:int64", "text:string"});
    o.dialect.comment = '#';
    o.dialect.quoted_newlines = newlines;
    CsvStreamSource source({path}, o);
    for (uint64_t cut = 0; cut <= text.size(); cut += 1 + cut % 61) {
      std::vector<int64_t> ids;
      for (const auto& e : ReadRange(source, {0, cut})) ids.push_back(Int(e, "id"));
      for (const auto& e : ReadRange(source, {cut, text.size()})) ids.push_back(Int(e, "id"));
      ASSERT_EQ(ids.size(), 60u) << "cut at " << cut << (newlines ? " (quoted newlines)" : "");
      for (int i = 0; i < 60; ++i) ASSERT_EQ(ids[i], i) << "cut at " << cut;
    }
  }
}

// A file of several MiB read by cuts in random order through one source: the resync scans
// start from the line starts earlier scans cached (one per MiB and where each stopped), and
// rows and line numbers stay exact.
TEST(CsvStream, CachedLineStartsKeepCutsExact) {
  shardflow::testing::ScratchDir dir("csv-line-starts");
  const std::string path = (dir / "big.csv").string();
  const std::string text = MakeTable(0, 3500, true, 13);  // ~3 MiB: long rows, quoted breaks
  ASSERT_GT(text.size(), 2 * io::CsvLineStarts::kCheckpointBytes);
  WriteFile(path, text);
  CsvSourceOptions o = Options({"id:int64"});
  o.dialect.comment = '#';
  CsvStreamSource fresh({path}, o);
  std::vector<int64_t> line_of(3500, -1);
  for (const auto& e : ReadRange(fresh)) line_of[Int(e, "id")] = e.where.record;
  CsvStreamSource source({path}, o);
  std::mt19937 rng(17);
  for (int k = 0; k < 25; ++k) {
    const uint64_t cut = rng() % text.size();
    std::vector<int64_t> ids;
    const auto tail = ReadRange(source, {cut, text.size()});
    for (const auto& e : ReadRange(source, {0, cut})) ids.push_back(Int(e, "id"));
    for (const auto& e : tail) {
      ids.push_back(Int(e, "id"));
      ASSERT_EQ(e.where.record, line_of[Int(e, "id")]) << "cut " << cut;
    }
    ASSERT_EQ(ids.size(), 3500u) << "cut " << cut;
    for (int i = 0; i < 3500; ++i) ASSERT_EQ(ids[i], i) << "cut " << cut;
  }
}

TEST(CsvStream, ByteRangesOverOneToFourRanksReadEveryRowOnce) {
  shardflow::testing::ScratchDir dir("csv-ranks");
  std::vector<std::string> files;
  std::multiset<std::string> want;
  for (int f = 0; f < 3; ++f) {
    files.push_back((dir / ("p" + std::to_string(f) + ".csv")).string());
    WriteFile(files.back(), MakeTable(f * 1000, 40 + f * 37, true, 11 + f));
    for (int i = 0; i < 40 + f * 37; ++i) want.insert(std::to_string(f * 1000 + i));
  }
  CsvSourceOptions o = Options({"id:int64", "x:float32"});
  o.dialect.comment = '#';
  auto source = std::make_shared<CsvStreamSource>(files, o);
  auto key = [](const Element& e) { return std::to_string(Int(e, "id")); };
  for (int ranks = 1; ranks <= 4; ++ranks) {
    for (auto policy : {ShardPolicy::kByteRange, ShardPolicy::kRecord, ShardPolicy::kFile}) {
      EXPECT_TRUE(ReadAllRanks(source, policy, ranks, key) == want)
          << ranks << " ranks, policy " << ShardPolicyName(policy);
    }
  }
}

TEST(CsvStream, QuotedNewlinesOffRefusesThemByName) {
  shardflow::testing::ScratchDir dir("csv-no-newlines");
  const std::string path = (dir / "t.csv").string();
  WriteFile(path, "id,text\n1,\"a\nb\"\n");
  CsvSourceOptions o = Options({"id:int64", "text:string"});
  o.dialect.quoted_newlines = false;
  ExpectHas(ErrorText([&] { ReadRange(CsvStreamSource({path}, o)); }),
            "t.csv:2:2: line break inside a quoted field (csv_quoted_newlines = false)");
}

TEST(CsvStream, ResumeFromPositionContinuesExactly) {
  shardflow::testing::ScratchDir dir("csv-resume");
  const std::string path = (dir / "r.csv").string();
  const std::string text = MakeTable(0, 50, true, 3);
  WriteFile(path, text);
  CsvSourceOptions o = Options({"id:int64"});
  o.dialect.comment = '#';
  CsvStreamSource source({path}, o);
  const ByteRange range{text.size() / 3, text.size()};
  auto reader = source.Open(0, range);
  Element e;
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(reader->Next(&e));
  const ReaderPosition at = reader->Position();
  std::vector<int64_t> rest, again;
  while (reader->Next(&e)) rest.push_back(Int(e, "id"));
  auto resumed = source.Open(0, range);
  resumed->Seek(at);
  while (resumed->Next(&e)) again.push_back(Int(e, "id"));
  EXPECT_EQ(rest, again);
  EXPECT_FALSE(rest.empty());
}

// The naive twin: io::ParseCsv reads the whole text at once. Random tables (fields with
// delimiters, quotes, line breaks, CRLF, blank lines; records longer than the 4 KiB read-ahead)
// must give the same fields, also when read as two byte ranges cut at a random point.
TEST(CsvStream, MatchesTheWholeFileParserOnRandomTables) {
  shardflow::testing::ScratchDir dir("csv-twin");
  std::mt19937 rng(5);
  const std::vector<std::string> pieces = {"a", "bc", " ", ",", "\"", "\n", "\r\n", "x;y", "0.5"};
  for (int round = 0; round < 20; ++round) {
    const int columns = 1 + static_cast<int>(rng() % 4);
    std::string text;
    std::vector<std::string> names;
    for (int c = 0; c < columns; ++c) names.push_back("c" + std::to_string(c));
    for (int c = 0; c < columns; ++c) text += (c ? "," : "") + names[c];
    text += "\n";
    const int rows = 20 + static_cast<int>(rng() % 40);
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < columns; ++c) {
        std::string field;
        const int n = static_cast<int>(rng() % (r % 9 == 0 ? 900 : 5));
        for (int k = 0; k < n; ++k) field += pieces[rng() % pieces.size()];
        const bool quote = field.find_first_of(",\"\r\n") != std::string::npos || field.empty();
        if (quote) {
          std::string q = "\"";
          for (char ch : field) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
          field = q + "\"";
        }
        text += (c ? "," : "") + field;
      }
      text += rng() % 2 ? "\n" : "\r\n";
      if (rng() % 10 == 0) text += "\n";
    }
    const std::string path = (dir / ("r" + std::to_string(round) + ".csv")).string();
    WriteFile(path, text);
    io::CsvOptions whole;
    std::vector<std::string> specs;
    for (const auto& n : names) {
      whole.columns.push_back({.name = n, .type = io::CsvType::kString, .default_value = ""});
      specs.push_back(n + ":string=");
    }
    const io::CsvTable table = io::ParseCsv(text, path, whole);
    CsvStreamSource source({path}, Options(specs));
    const uint64_t cut = rng() % (text.size() + 1);
    std::vector<Element> rows_read = ReadRange(source, {0, cut});
    for (auto& e : ReadRange(source, {cut, text.size()})) rows_read.push_back(e);
    ASSERT_EQ(static_cast<int64_t>(rows_read.size()), table.rows) << "round " << round;
    for (int64_t r = 0; r < table.rows; ++r) {
      for (int c = 0; c < columns; ++c) {
        ASSERT_EQ(FeatureText(rows_read[r], names[c]), table.columns[c].strings[r])
            << "round " << round << ", row " << r << ", column " << c << ", cut " << cut;
      }
    }
  }
}

}  // namespace csv_stream_test
}  // namespace shardflow::pipeline
