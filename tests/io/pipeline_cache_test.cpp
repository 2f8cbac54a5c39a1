// cache(memory | file): fills once, replays later, survives restarts, invalidated on change.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "io/pipeline/data_options.hpp"
#include "io/pipeline/fixed_length_source.hpp"
#include "io/pipeline/shard_policy.hpp"
#include "pipeline_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace pipeline_cache_test {

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
                   std::shared_ptr<std::atomic<int>> calls, bool refill_damaged = false) {
  auto source = std::make_shared<FixedLengthRecordSource>(files, 4);
  ShardPlan plan = PlanShards(source->Files(), true, ShardPolicy::kFile, 1, 0);
  return Dataset::FromRecordSource(source, plan).Map(Counting(calls)).Cache(cache, refill_damaged);
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

std::vector<std::string> Texts(const std::vector<Element>& elements) {
  std::vector<std::string> out;
  for (const Element& e : elements) out.push_back(RecordText(e));
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Issue 27.3: one flipped byte in the middle of a cache file was replayed silently. Every
// block is checked: damage fails the pass naming the file (on_corrupt = fail), or the cache is
// refilled from the input and the pass goes on with the right elements (refill_damaged).
TEST(PipelineCache, DamagedCacheFileIsDetected) {
  shardflow::testing::ScratchDir dir("pipeline_cache_damage");
  const std::vector<std::string> files = {(dir / "a.bin").string()};
  WriteRecords(files[0], 40, '0');
  const std::string cache = (dir / "train.cache").string();
  auto calls = std::make_shared<std::atomic<int>>(0);
  const auto want = Texts(Drain(FileCached(files, cache, calls)));
  ASSERT_EQ(want.size(), 40u);
  const std::string good = ReadAll(cache);
  for (size_t at : {good.size() / 2, size_t{40}, good.size() - 20}) {
    SCOPED_TRACE("byte " + std::to_string(at));
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    WriteAll(cache, bad);
    try {
      Drain(FileCached(files, cache, calls));
      FAIL() << "a damaged cache file was replayed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
      EXPECT_NE(std::string(e.what()).find("cache file is damaged"), std::string::npos);
      EXPECT_EQ(e.context().file, cache);
    }
    WriteAll(cache, bad);
    const int before = calls->load();
    EXPECT_EQ(Texts(Drain(FileCached(files, cache, calls, true))), want);
    EXPECT_EQ(calls->load(), before + 40);  // refilled from the input once
    EXPECT_EQ(ReadAll(cache), good);
  }
  // Truncated: never replayed short.
  WriteAll(cache, good.substr(0, good.size() - 30));
  EXPECT_THROW(Drain(FileCached(files, cache, calls)), Error);
}

// Issue 27.4: a cache file written by another rank, a partial or garbled one (two ranks
// writing one path) is a clear message or a refill, never an internal error; each rank of a
// job has its own file.
TEST(PipelineCache, ForeignOrGarbledCacheFilesAreNeverInternalErrors) {
  shardflow::testing::ScratchDir dir("pipeline_cache_foreign");
  const std::vector<std::string> files = {(dir / "a.bin").string()};
  WriteRecords(files[0], 12, 'a');
  const std::string cache = (dir / "c.cache").string();
  auto calls = std::make_shared<std::atomic<int>>(0);
  const auto want = Texts(Drain(FileCached(files, cache, calls)));
  const std::string good = ReadAll(cache);
  // A header and then another writer's bytes: a huge element length.
  std::string garbled = good.substr(0, 32) + std::string(24, '\xff') + good.substr(56);
  WriteAll(cache, garbled);
  try {
    Drain(FileCached(files, cache, calls));
    FAIL() << "a garbled cache file was replayed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
  }
  // Not a cache file at all, or one of the first format: refilled.
  for (const std::string& other : {std::string(100, 'z'), std::string("SFCACHE1") + good}) {
    WriteAll(cache, other);
    EXPECT_EQ(Texts(Drain(FileCached(files, cache, calls))), want);
    EXPECT_EQ(ReadAll(cache), good);
  }
  EXPECT_EQ(RankCacheFile("/d/c.cache", 1, 3), "/d/c.cache.rank1-of-3");
  // Through the data options, two ranks write two files and both replay them.
  DataOptions o;
  o.files = files;
  o.format = "u32";
  o.cache = cache;
  o.batch_size = 2;
  o.epochs = 2;
  const SourceFactory factory = [](const std::string&, const std::vector<std::string>& f) {
    return std::make_shared<FixedLengthRecordSource>(f, 4);
  };
  for (int rank : {0, 1}) {
    Drain(BuildPipeline(o, factory, MapFn{}, rank, 2).dataset);
    EXPECT_TRUE(std::filesystem::exists(RankCacheFile(cache, rank, 2))) << rank;
  }
}

// Issue 27.2 for a file cache: the file deleted between the save and the restore is refilled.
TEST(PipelineCache, FileCacheResumesWhenTheFileIsGone) {
  shardflow::testing::ScratchDir dir("pipeline_cache_resume");
  const std::vector<std::string> files = {(dir / "a.bin").string()};
  WriteRecords(files[0], 10, 'a');
  const std::string cache = (dir / "r.cache").string();
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto build = [&] {
    return FileCached(files, cache, calls).Shuffle({.buffer_elements = 3, .seed = 5}).Repeat(3);
  };
  const auto want = Texts(Drain(build()));
  ASSERT_EQ(want.size(), 30u);
  std::filesystem::remove(cache);
  PipelineIterator first = build().MakeIterator();
  std::vector<std::string> got;
  Element e;
  for (int i = 0; i < 17 && first.Next(&e); ++i) got.push_back(RecordText(e));
  const std::string blob = first.SaveState();
  std::filesystem::remove(cache);
  PipelineIterator resumed = build().MakeIterator();
  resumed.RestoreState(blob);
  while (resumed.Next(&e)) got.push_back(RecordText(e));
  EXPECT_EQ(got, want);
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

}  // namespace pipeline_cache_test
}  // namespace shardflow::pipeline
