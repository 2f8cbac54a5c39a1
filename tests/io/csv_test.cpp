// CSV reader: typed columns, RFC 4180 quoting, defaults, errors that name file, line and
// column, and the tokenizer against a naive character-at-a-time twin on random text.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "io/csv.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::io {
namespace csv_test {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename Fn>
Error ErrorOf(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e;
  }
  return Error(ErrorCode::kOk, "(no error)");
}

template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}

TEST(Csv, SensorSeriesTypedColumnsInChosenOrder) {
  testing::ScratchDir dir("csv");
  const auto path = dir / "asset-17.csv";
  std::ofstream(path) << "timestamp,site,temp,pressure,flow\n"
                         "1700000000,north,21.5,1013.25,-3\n"
                         "1700000060, south ,+22.25, 1013.5 ,4e2\n"
                         "1700000120,\"west, upper\",nan,1014,0.5\n";
  CsvOptions options;
  options.columns = {{"flow", CsvType::kFloat64},
                     {"timestamp", CsvType::kInt64},
                     {"temp", CsvType::kFloat32},
                     {"site", CsvType::kString}};
  const CsvTable t = ReadCsv(path.string(), options);
  EXPECT_EQ(t.rows, 3);
  EXPECT_THAT(t.header, ElementsAre("timestamp", "site", "temp", "pressure", "flow"));
  ASSERT_EQ(t.columns.size(), 4u);
  EXPECT_EQ(t.columns[0].name, "flow");
  EXPECT_THAT(Values<double>(t["flow"].values), ElementsAre(-3.0, 400.0, 0.5));
  EXPECT_THAT(Values<int64_t>(t["timestamp"].values),
              ElementsAre(1700000000, 1700000060, 1700000120));
  const auto temp = Values<float>(t["temp"].values);
  EXPECT_EQ(temp[0], 21.5f);
  EXPECT_EQ(temp[1], 22.25f);
  EXPECT_TRUE(std::isnan(temp[2]));
  EXPECT_THAT(t["site"].strings, ElementsAre("north", " south ", "west, upper"));
  EXPECT_EQ(t["temp"].values.shape(), Shape{3});
  EXPECT_EQ(ErrorOf([&] { (void)t["pressure"]; }).code(), ErrorCode::kNotFound);
}

TEST(Csv, AllColumnsAsFloat64ByDefault) {
  const CsvTable t = ParseCsv("a;b\r\n1;2\r\n\r\n3;4.5", "mem", {.delimiter = ';'});
  EXPECT_EQ(t.rows, 2);
  EXPECT_THAT(Values<double>(t["b"].values), ElementsAre(2.0, 4.5));
}

TEST(Csv, Rfc4180Quoting) {
  const std::string text =
      "id,text,n\r\n"
      "1,\"a, b\",5\r\n"
      "2,\"she said \"\"hi\"\"\",6\r\n"
      "3,\"two\r\nlines\nthree\",7\r\n"
      "4,\"\",8\r\n"
      "5,plain,9";
  CsvOptions options;
  options.columns = {{"text", CsvType::kString}, {"n", CsvType::kInt64}};
  const CsvTable t = ParseCsv(text, "q.csv", options);
  EXPECT_THAT(t["text"].strings,
              ElementsAre("a, b", "she said \"hi\"", "two\r\nlines\nthree", "", "plain"));
  EXPECT_THAT(Values<int64_t>(t["n"].values), ElementsAre(5, 6, 7, 8, 9));
}

TEST(Csv, MissingValueIsAnErrorOrTakesTheDefault) {
  const std::string text = "t,x,y\n1,2.5,3\n2,,4\n3,5,\n";
  CsvOptions options;
  options.columns = {{"x", CsvType::kFloat32}, {"y", CsvType::kInt64}};
  const Error e = ErrorOf([&] { ParseCsv(text, "s.csv", options); });
  EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  EXPECT_THAT(e.what(), HasSubstr("missing float32 value at line 3, column 2 ('x')"));
  EXPECT_THAT(e.what(), HasSubstr("file=s.csv"));
  options.columns[0].default_value = "-1";
  options.columns[1].default_value = "0";
  const CsvTable t = ParseCsv(text, "s.csv", options);
  EXPECT_THAT(Values<float>(t["x"].values), ElementsAre(2.5f, -1.0f, 5.0f));
  EXPECT_THAT(Values<int64_t>(t["y"].values), ElementsAre(3, 4, 0));
  options.columns[1].default_value = "zero";
  EXPECT_THAT(ErrorOf([&] { ParseCsv(text, "s.csv", options); }).what(),
              HasSubstr("default value 'zero' of column 'y' is not a valid int64"));
}

TEST(Csv, BadNumbersNameLineAndColumn) {
  // Line numbers count the line breaks inside quoted fields.
  const std::string text = "a,b\n\"x\ny\",1\n2,12x\n";
  CsvOptions options;
  options.columns = {{"b", CsvType::kInt64}};
  EXPECT_THAT(ErrorOf([&] { ParseCsv(text, "n.csv", options); }).what(),
              HasSubstr("bad int64 value '12x' at line 4, column 2 ('b')"));
  options.columns = {{"b", CsvType::kFloat64}};
  EXPECT_THAT(ErrorOf([&] { ParseCsv("b\n1.5.2\n", "n.csv", options); }).what(),
              HasSubstr("bad float64 value '1.5.2' at line 2"));
  options.columns = {{"b", CsvType::kInt64}};
  EXPECT_THAT(ErrorOf([&] { ParseCsv("b\n99999999999999999999\n", "n.csv", options); }).what(),
              HasSubstr("bad int64 value"));
}

TEST(Csv, MalformedRecords) {
  Error e = ErrorOf([] { ParseCsv("a,b\n1,\"open\n2,3\n", "u.csv", {}); });
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
  EXPECT_THAT(e.what(), HasSubstr("unterminated quoted field (opened at line 2)"));
  EXPECT_THAT(e.what(), HasSubstr("column 2 ('b')"));
  EXPECT_THAT(e.what(), HasSubstr("file=u.csv"));
  EXPECT_THAT(ErrorOf([] { ParseCsv("a,b\n1,2\n3\n", "f.csv", {}); }).what(),
              HasSubstr("record at line 3 has 1 fields, the header has 2"));
  EXPECT_THAT(ErrorOf([] { ParseCsv("a,b\n1,x\"y\n", "f.csv", {}); }).what(),
              HasSubstr("quote inside an unquoted field at line 2, column 2 ('b')"));
  EXPECT_THAT(ErrorOf([] { ParseCsv("a,b\n1,\"x\"y\n", "f.csv", {}); }).what(),
              HasSubstr("unexpected 'y' after a closing quote at line 2"));
  EXPECT_THAT(ErrorOf([] { ParseCsv("", "e.csv", {}); }).what(), HasSubstr("no header row"));
  EXPECT_THAT(ErrorOf([] { ParseCsv("a,a\n", "d.csv", {}); }).what(),
              HasSubstr("duplicate column name 'a'"));
}

TEST(Csv, MissingColumnAndFile) {
  CsvOptions options;
  options.columns = {{"humidity", CsvType::kFloat32}};
  const Error e = ErrorOf([&] { ParseCsv("time,temp\n1,2\n", "m.csv", options); });
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_THAT(e.what(), HasSubstr("no column 'humidity'"));
  EXPECT_THAT(e.what(), HasSubstr("columns there: time, temp"));
  EXPECT_EQ(ErrorOf([] { ReadCsv("/no/such.csv", {}); }).code(), ErrorCode::kNotFound);
}

// Naive twin of the tokenizer: one character at a time through an explicit state machine.
std::vector<std::vector<std::string>> NaiveParse(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> record;
  std::string field;
  enum { kStart, kUnquoted, kQuoted, kQuoteInQuoted } state = kStart;
  bool any = false;
  auto end_field = [&] {
    record.push_back(field);
    field.clear();
  };
  auto end_record = [&] {
    end_field();
    if (!(record.size() == 1 && record[0].empty() && !any)) records.push_back(record);
    record.clear();
    any = false;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (state) {
      case kStart:
      case kUnquoted:
        if (c == '"' && state == kStart) {
          state = kQuoted;
          any = true;
        } else if (c == ',') {
          end_field();
          any = true;
          state = kStart;
        } else if (c == '\n' || c == '\r') {
          if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
          end_record();
          state = kStart;
        } else {
          field += c;
          any = true;
          state = kUnquoted;
        }
        break;
      case kQuoted:
        if (c == '"') {
          state = kQuoteInQuoted;
        } else {
          field += c;
        }
        break;
      case kQuoteInQuoted:
        if (c == '"') {
          field += '"';
          state = kQuoted;
        } else {
          --i;  // reprocess as after an unquoted field
          state = kUnquoted;
        }
        break;
    }
  }
  if (any || !field.empty()) end_record();
  return records;
}

TEST(Csv, TokenizerMatchesNaiveTwinOnRandomText) {
  std::mt19937 rng(42);
  const std::vector<std::string> atoms = {"a", "bc", " ", "1.5", "", "x y"};
  for (int round = 0; round < 300; ++round) {
    const int cols = 1 + static_cast<int>(rng() % 4);
    const int rows = static_cast<int>(rng() % 6);
    std::string text;
    std::vector<std::string> header;
    for (int c = 0; c < cols; ++c) header.push_back(std::string("c").append(std::to_string(c)));
    for (int c = 0; c < cols; ++c) text += (c ? "," : "") + header[static_cast<size_t>(c)];
    text += "\n";
    for (int r = 0; r < rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        if (c) text += ',';
        std::string v = atoms[rng() % atoms.size()];
        const int kind = static_cast<int>(rng() % 4);
        if (kind == 0) v += ",\"\n";  // needs quoting
        if (kind >= 2 || kind == 0) {
          std::string q = "\"";
          for (char ch : v) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
          v = q + "\"";
        } else if (v.empty() && cols == 1) {
          v = "\"\"";  // an empty unquoted value alone on a line is a blank line
        }
        text += v;
      }
      text += rng() % 2 ? "\r\n" : "\n";
    }
    CsvOptions options;
    for (const auto& h : header) options.columns.push_back({h, CsvType::kString});
    const CsvTable t = ParseCsv(text, "rand.csv", options);
    const auto want = NaiveParse(text);
    ASSERT_EQ(static_cast<size_t>(t.rows) + 1, want.size()) << text;
    for (int64_t r = 0; r < t.rows; ++r) {
      for (int c = 0; c < cols; ++c) {
        ASSERT_EQ(t.columns[static_cast<size_t>(c)].strings[static_cast<size_t>(r)],
                  want[static_cast<size_t>(r) + 1][static_cast<size_t>(c)])
            << text;
      }
    }
  }
}

}  // namespace csv_test
}  // namespace shardflow::io
