// cache(memory | file): fills once, replays later, survives restarts, invalidated on change.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/pipeline/fixed_length_source.hpp"
#include "io/pipeline/shard_policy.hpp"
#include "pipeline_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace {

using testing::Drain;
using testing::RecordText;

MapFn Counting(std::shared_ptr<std::atomic<int>> calls) {
  return [calls](Element& e, const MapContext&) {
    calls->fetch_add(1);
    Tensor t(DType::kInt64, {});
    *t.data<int64_t>() = e.id;
    e.Set("seen", t);
  };
}

TEST(PipelineCache, MemoryCacheFillsOnceAndReplays) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto ds =
      testing::Range(25).Map(Counting(calls)).Cache().Shuffle({.buffer_elements = 5}).Repeat(3);
  auto out = Drain(ds);
  EXPECT_EQ(out.size(), 75u);
  EXPECT_EQ(calls->load(), 25);
  // A pass that stops early does not leave a partial cache behind.
  auto calls2 = std::make_shared<std::atomic<int>>(0);
  auto partial = testing::Range(10).Map(Counting(calls2)).Cache();
  Drain(partial.Take(3));
  EXPECT_EQ(Drain(partial).size(), 10u);
}

void WriteRecords(const std::filesystem::path& path, int n, char base) {
  std::ofstream out(path, std::ios::binary);
  for (int i = 0; i < n; ++i) out << std::string(4, static_cast<char>(base + i));
}

Dataset FileCached(const std::vector<std::string>& files, const std::string& cache,
                   std::shared_ptr<std::atomic<int>> calls) {
  auto source = std::make_shared<FixedLengthRecordSource>(files, 4);
  ShardPlan plan = PlanShards(source->Files(), true, ShardPolicy::kFile, 1, 0);
  return Dataset::FromRecordSource(source, plan).Map(Counting(calls)).Cache(cache);
}

TEST(PipelineCache, FileCacheSurvivesRestartAndIsInvalidatedByChanges) {
  shardflow::testing::ScratchDir dir("pipeline_cache");
  const std::vector<std::string> files = {(dir / "a.bin").string(), (dir / "b.bin").string()};
  WriteRecords(files[0], 5, 'a');
  WriteRecords(files[1], 3, 'A');
  const std::string cache = (dir / "train.cache").string();

  auto calls = std::make_shared<std::atomic<int>>(0);
  auto first = Drain(FileCached(files, cache, calls));
  EXPECT_EQ(first.size(), 8u);
  EXPECT_EQ(calls->load(), 8);
  EXPECT_TRUE(std::filesystem::exists(cache));
  EXPECT_FALSE(std::filesystem::exists(cache + ".tmp"));

  // "Restart": a new pipeline object with the same inputs replays the file.
  auto replay = Drain(FileCached(files, cache, calls));
  EXPECT_EQ(calls->load(), 8);
  ASSERT_EQ(replay.size(), first.size());
  for (size_t i = 0; i < replay.size(); ++i) {
    EXPECT_EQ(RecordText(replay[i]), RecordText(first[i]));
    EXPECT_EQ(replay[i].id, first[i].id);
    EXPECT_EQ(*replay[i].where.file, *first[i].where.file);
    EXPECT_EQ(*replay[i].Get("seen").data<int64_t>(), first[i].id);
  }

  // A changed input file (size and mtime) invalidates it: refilled from the new data.
  WriteRecords(files[1], 4, 'X');
  auto changed = Drain(FileCached(files, cache, calls));
  EXPECT_EQ(changed.size(), 9u);
  EXPECT_EQ(calls->load(), 17);
  EXPECT_EQ(RecordText(changed.back()), "[[[[");
  // A different pipeline above the same files also gets its own contents.
  auto calls2 = std::make_shared<std::atomic<int>>(0);
  auto other = Drain(FileCached({files[0]}, cache, calls2));
  EXPECT_EQ(other.size(), 5u);
  EXPECT_EQ(calls2->load(), 5);

  // An interrupted fill leaves the previous complete cache alone and no temp file.
  {
    PipelineIterator it = FileCached(files, cache, calls2).MakeIterator();
    Element e;
    it.Next(&e);
  }
  EXPECT_FALSE(std::filesystem::exists(cache + ".tmp"));
}

TEST(PipelineCache, FixedLengthSourceReportsTruncationAndMissingFiles) {
  shardflow::testing::ScratchDir dir("fixed_length");
  const std::string path = (dir / "t.bin").string();
  { std::ofstream(path, std::ios::binary) << "abcdefghij"; }  // 2.5 records of 4
  try {  // the partial record is reported when the source is opened
    FixedLengthRecordSource source(std::vector<std::string>{path}, 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(std::string(e.what()).find("record=2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("t.bin"), std::string::npos) << e.what();
  }
  EXPECT_THROW(FixedLengthRecordSource({(dir / "none.bin").string()}, 4), Error);
}

}  // namespace
}  // namespace shardflow::pipeline
