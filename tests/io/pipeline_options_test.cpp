// DataOptions + BuildPipeline over a source factory; autotune decisions and their log.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>

#include "core/logging.hpp"
#include "io/pipeline/autotune.hpp"
#include "io/pipeline/data_options.hpp"
#include "io/pipeline/fixed_length_source.hpp"
#include "io/pipeline/ops/tensor_ops.hpp"
#include "io/pipeline/parallel_map.hpp"
#include "pipeline_test_util.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace pipeline_options_test {

SourceFactory FixedLengthFactory() {
  return [](const std::string& format,
            const std::vector<std::string>& files) -> std::shared_ptr<const RecordSource> {
    if (format != "u32") return nullptr;
    return std::make_shared<FixedLengthRecordSource>(files, 4);
  };
}

TEST(PipelineOptions, BuildsAShardedShuffledBatchedPipeline) {
  shardflow::testing::ScratchDir dir("options");
  uint32_t value = 0;
  for (int f = 0; f < 3; ++f) {
    std::ofstream out(dir / ("part" + std::to_string(f) + ".bin"), std::ios::binary);
    for (int i = 0; i < 33 + f; ++i, ++value) out.write(reinterpret_cast<char*>(&value), 4);
  }
  DataOptions o;
  o.files = {(dir.path() / "part*.bin").string()};
  o.format = "u32";
  o.shuffle_buffer = 16;
  o.parallel_reads = 2;
  o.parallel_calls = 2;
  o.prefetch = 2;
  o.seed = 7;
  o.batch_size = 8;
  o.epochs = 2;
  MapFn decode = DecodeRaw("bytes", DType::kInt32, {}, "value");
  for (int ranks : {1, 2}) {
    std::multiset<int32_t> seen;
    for (int rank = 0; rank < ranks; ++rank) {
      BuiltPipeline built = BuildPipeline(o, FixedLengthFactory(), decode, rank, ranks);
      EXPECT_NE(built.description.find("shard_policy="), std::string::npos);
      for (const auto& batch : testing::Drain(built.dataset)) {
        const Tensor& v = batch.Get("value");
        for (int64_t i = 0; i < v.num_elements(); ++i) seen.insert(v.data<int32_t>()[i]);
      }
    }
    ASSERT_EQ(seen.size(), 2u * 102);  // every record twice (two epochs), across ranks
    for (int32_t v = 0; v < 102; ++v) EXPECT_EQ(seen.count(v), 2u) << v;
  }
  o.format = "nope";
  EXPECT_THROW(BuildPipeline(o, FixedLengthFactory(), decode, 0, 1), Error);
  o.format = "u32";
  o.augmentations = {"sharpen"};
  try {
    BuildPipeline(o, FixedLengthFactory(), decode, 0, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.context().key, "augmentations");
  }
  o.augmentations = {};
  o.files = {(dir.path() / "missing*.bin").string()};
  EXPECT_THROW(BuildPipeline(o, FixedLengthFactory(), decode, 0, 1), Error);
}

TEST(PipelineOptions, AugmentationSpecsParse) {
  for (const char* spec : {"random_flip", "random_crop:2x2", "resize:4x4", "scale:0.5",
                           "normalize:1,2/3,4", "one_hot:label:10"}) {
    EXPECT_TRUE(static_cast<bool>(ParseAugmentation(spec, "image", 1))) << spec;
  }
  for (const char* spec : {"random_crop:2", "resize:ax2", "normalize:1,2", "scale:", "blur"}) {
    EXPECT_THROW(ParseAugmentation(spec, "image", 1), Error) << spec;
  }
}

// A fresh tuner over a map that spins ~2 ms per element feeding a consumer that never waits,
// stepped by hand until it decides (4 steps at most); returns its decisions.
std::vector<std::string> TuneSpinningMap(const std::string& name, bool log) {
  Autotuner::Options topt;
  topt.cpu_budget = 2;
  topt.interval_s = 3600;  // steps driven by hand below
  topt.log = log;
  auto tuner = std::make_shared<Autotuner>(topt);
  IteratorContext ctx;
  ctx.autotuner = tuner;
  auto spin = [](Element&, const MapContext&) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    while (std::chrono::steady_clock::now() < end) {
    }
  };
  NodePtr node = MakeMapNode(testing::Range(1000).Repeat().node(), spin,
                             {.name = name, .num_parallel_calls = kAutotune});
  auto it = node->MakeIterator(ctx);
  Element e;
  for (int step = 0; step < 4 && tuner->Decisions().empty(); ++step) {
    for (int i = 0; i < 40; ++i) EXPECT_TRUE(it->Next(&e));
    tuner->Step();
  }
  it.reset();
  return tuner->Decisions();
}

TEST(PipelineAutotune, RaisesParallelismOfAStarvedCpuBoundStage) {
  // The stage is the bottleneck, so the tuner adds workers (up to the 2-thread budget) and
  // says why.
  const auto decisions = TuneSpinningMap("spin", /*log=*/false);
  ASSERT_FALSE(decisions.empty());
  EXPECT_NE(decisions[0].find("spin: 1 -> 2 workers"), std::string::npos) << decisions[0];
  EXPECT_NE(decisions[0].find("starved"), std::string::npos) << decisions[0];
}

int CountLines(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
  return n;
}

// The autotuner logs a change once (issue 24, item 2): every epoch's pipeline starts from the
// same settings and makes the same moves, which used to repeat the same info line each epoch.
TEST(PipelineAutotuneLog, TheSameChangeIsLoggedOnce) {
  char path[] = "/tmp/autotune_log_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const LogLevel level = GetLogLevel();
  SetLogLevel(LogLevel::kInfo);
  SetLogFileDescriptor(fd);
  const auto first = TuneSpinningMap("spin_log", /*log=*/true);
  const auto second = TuneSpinningMap("spin_log", /*log=*/true);
  SetLogFileDescriptor(STDERR_FILENO);
  SetLogLevel(level);
  ::close(fd);
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  ASSERT_NE(first[0].find("spin_log: 1 -> 2 workers"), std::string::npos) << first[0];
  ASSERT_NE(second[0].find("spin_log: 1 -> 2 workers"), std::string::npos) << second[0];
  EXPECT_EQ(CountLines(path, "autotune: spin_log: 1 -> 2 workers"), 1);
  std::remove(path);
}

}  // namespace pipeline_options_test
}  // namespace shardflow::pipeline
