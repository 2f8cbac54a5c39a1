// csv_skip_lines (io/pipeline/sources/csv_options.hpp): records before a CSV's header, as in
// scikit-learn's breast_cancer.csv ("569,30,malignant,benign" above the column names), are
// skipped on every path that reads CSV; header_lines, which has no effect on CSV, is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "io/pipeline/sources/csv_options.hpp"
#include "io/pipeline/sources/csv_stream_source.hpp"
#include "io/pipeline/sources/format_options.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline::csv_skip_lines_test {

const char kBreastCancerLike[] =
    "3,2,malignant,benign\n"
    "mean radius,mean texture,target\n"
    "17.99,10.38,0\n"
    "20.57,17.77,0\n"
    "13.54,14.36,1\n";

std::vector<Element> ReadAll(const RecordSource& source) {
  std::vector<Element> out;
  for (size_t f = 0; f < source.Files().size(); ++f) {
    auto reader = source.Open(f, ByteRange{});
    Element e;
    while (reader->Next(&e)) out.push_back(e);
  }
  return out;
}

TEST(CsvSkipLines, MetadataBeforeTheHeaderIsSkippedWithAndWithoutAHeader) {
  const ::shardflow::testing::ScratchDir dir("csv_skip_lines");
  const std::string path = (dir / "bc.csv").string();
  ::shardflow::pipeline::testing::WriteFile(path, kBreastCancerLike);
  CsvConfig config;
  config.columns = {"mean radius:float32", "target:int64"};
  config.skip_lines = 1;
  const CsvStreamSource with_header({path}, MakeCsvSourceOptions(config, {}, {}, "data"));
  const std::vector<Element> rows = ReadAll(with_header);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_FLOAT_EQ(rows[0].Get("mean radius").data<float>()[0], 17.99f);
  EXPECT_EQ(rows[2].Get("target").data<int64_t>()[0], 1);
  EXPECT_EQ(rows[0].where.record, 2);  // 0-based physical line

  config.skip_lines = 2;  // the metadata and the header, the columns named here
  config.header = false;
  config.column_names = {"mean radius", "mean texture", "target"};
  const CsvStreamSource without({path}, MakeCsvSourceOptions(config, {}, {}, "data"));
  EXPECT_EQ(ReadAll(without).size(), 3u);

  config.skip_lines = 0;  // unskipped, the metadata line is the header: no 'target' column
  config.header = true;
  config.column_names = {};
  EXPECT_THROW(CsvStreamSource({path}, MakeCsvSourceOptions(config, {}, {}, "data")), Error);
}

TEST(CsvSkipLines, HeaderLinesIsRefusedWhereItHasNoEffect) {
  FormatOptions o;
  o.header_lines = 1;
  try {
    CheckFormatOptions("csv", o, "data");
    ADD_FAILURE() << "header_lines accepted for csv";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("data.header_lines applies to format text and jsonl"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("csv_skip_lines"), std::string::npos) << e.what();
  }
  o.json_schema = "x:float32";
  EXPECT_NO_THROW(CheckFormatOptions("jsonl", o, "data"));
}

}  // namespace shardflow::pipeline::csv_skip_lines_test
