// A bad record is warned once per process, however many passes meet it (issue 28, item 8): the
// counting pass, the read pass and every epoch. JSON lines under on_error = skip add 1 to
// DistinctSkippedRecords per bad line; a partial fixed-length record is warned once.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/logging.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/sources/source_counters.hpp"
#include "source_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace source_warn_once_test {

using testing::Drain;
using testing::WriteFile;

InputSpec Parse(const std::string& body) {
  ConfigSchema schema;
  InputSpec spec;
  RegisterDataOptions(schema, "data", &spec);
  schema.ParseString("[data]\nparallel_calls = 0\nprefetch = 0\n" + body, "exp.ini");
  return spec;
}

int CountLines(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
  return n;
}

// Counts the records (as the apps' parse phase does), then reads 3 epochs, logging to a file.
std::string CountThenRead(const InputSpec& spec) {
  char path[] = "/tmp/warn_once_log_XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  SetLogFileDescriptor(fd);
  CountLocalRecords(spec, 0, 1);
  Drain(BuildInputPipeline(spec, 0, 1));
  SetLogFileDescriptor(STDERR_FILENO);
  ::close(fd);
  return path;
}

TEST(SourceWarnOnce, BadJsonLineIsWarnedAndTalliedOnce) {
  shardflow::testing::ScratchDir dir("warn_once_jsonl");
  WriteFile((dir / "a.jsonl").string(), "{\"v\": 1}\n{\"v\": \"x\"}\n{\"v\": 3}\n");
  const InputSpec spec = Parse("files = " + (dir / "a.jsonl").string() +
                               "\nformat = jsonl\njson_schema = v:int64\non_error = skip\n"
                               "epochs = 3\nbatch_size = 2\n");
  const int64_t before = DistinctSkippedRecords();
  const std::string log = CountThenRead(spec);
  // The process logs its first 10 distinct bad records; other tests of this binary may have
  // used them up, and then the line is counted only.
  EXPECT_EQ(CountLines(log, "skipping bad record: data loss: line 2, field 'v'"),
            before < 10 ? 1 : 0);
  EXPECT_EQ(DistinctSkippedRecords() - before, 1);
  std::remove(log.c_str());
}

TEST(SourceWarnOnce, PartialFixedRecordIsWarnedOnce) {
  shardflow::testing::ScratchDir dir("warn_once_fixed");
  WriteFile((dir / "a.bin").string(), std::string(10, 'x'));
  const InputSpec spec = Parse("files = " + (dir / "a.bin").string() +
                               "\nformat = fixed\nrecord_bytes = 3\ntail = skip\nepochs = 3\n"
                               "batch_size = 2\n");
  const std::string log = CountThenRead(spec);
  EXPECT_EQ(CountLines(log, "dropping a partial record"), 1);
  std::remove(log.c_str());
}

}  // namespace source_warn_once_test
}  // namespace shardflow::pipeline
