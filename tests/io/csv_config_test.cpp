// [data] format = csv through RegisterDataOptions + BuildInputPipeline: the csv_* keys (typed
// columns with defaults, no header with column names, tab delimiter, comments, NA values),
// assembled inputs batched, every row exactly once over 1..4 simulated ranks by byte range
// with CountLocalRecords in agreement, and bad keys named.
#include <gtest/gtest.h>

#include <set>

#include "io/pipeline/input_pipeline.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace csv_config_test {

using testing::Drain;
using testing::ErrorText;
using testing::ExpectHas;
using testing::WriteFile;

InputSpec Parse(const std::string& body) {
  ConfigSchema schema;
  InputSpec spec;
  RegisterDataOptions(schema, "data", &spec);
  schema.ParseString("[data]\nparallel_calls = 0\nprefetch = 0\nepochs = 1\n" + body, "exp.ini");
  return spec;
}

TEST(CsvConfig, KeysReadTabSeparatedRowsOnceOverOneToFourRanks) {
  shardflow::testing::ScratchDir dir("csv-config");
  std::string text = "# generated\n";
  for (int i = 0; i < 300; ++i) {
    text += std::to_string(i) + "\t" + (i % 7 == 0 ? std::string("NA") : std::to_string(i * 0.5)) +
            "\t" + (i % 3 == 0 ? "\"red\tdark\"" : "blue") + "\n";
    if (i % 50 == 0) text += "# a comment\n\n";
  }
  WriteFile((dir / "a.tsv").string(), text);
  WriteFile((dir / "b.tsv").string(), "1000\t1\tblue\n");
  WriteFile((dir / "colors.txt").string(), "blue\nred\tdark\n");
  const InputSpec spec = Parse("files = " + (dir / "*.tsv").string() +
                               "\nformat = csv\nshard_policy = byte_range\nbatch_size = 16\n"
                               "csv_header = false\ncsv_column_names = id, x, color\n"
                               "csv_columns = id:int64, x:float32=-1, color:string\n"
                               "csv_delimiter = tab\ncsv_comment = hash\ncsv_na_values = NA\n"
                               "assemble = x, color:onehot=" +
                               (dir / "colors.txt").string() + "\n");
  for (int world = 1; world <= 4; ++world) {
    std::multiset<int64_t> ids;
    for (int rank = 0; rank < world; ++rank) {
      int64_t n = 0;
      for (const Element& b : Drain(BuildInputPipeline(spec, rank, world))) {
        const Tensor& input = b.Get("input");
        ASSERT_EQ(input.dim(1), 4);  // x + blue, red\tdark, oov
        for (int64_t r = 0; r < input.dim(0); ++r) {
          const int64_t id = b.Get("id").data<int64_t>()[r];
          const float* row = input.data<float>() + 4 * r;
          if (id < 1000) {
            EXPECT_FLOAT_EQ(row[0], id % 7 == 0 ? -1.f : id * 0.5f) << id;
            EXPECT_EQ(row[id % 3 == 0 ? 2 : 1], 1.f) << id;
          }
          ids.insert(id);
          ++n;
        }
      }
      EXPECT_EQ(CountLocalRecords(spec, rank, world), n) << rank << "/" << world;
    }
    std::multiset<int64_t> want;
    for (int i = 0; i < 300; ++i) want.insert(i);
    want.insert(1000);
    EXPECT_EQ(ids, want) << "world " << world;
  }
}

TEST(CsvConfig, BadKeysAreNamed) {
  ExpectHas(ErrorText([] { Parse("files = x\nformat = csv\ncsv_delimiter = ab\n"); }),
            "data.csv_delimiter");
  ExpectHas(ErrorText([] { Parse("files = x\nformat = csv\ncsv_columns = a:int32\n"); }),
            "data.csv_columns");
  ExpectHas(ErrorText([] { Parse("files = x\nformat = csv\ncsv_comment = ab\n"); }),
            "data.csv_comment");
}

}  // namespace csv_config_test
}  // namespace shardflow::pipeline
