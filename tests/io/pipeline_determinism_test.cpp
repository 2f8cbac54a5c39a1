// Determinism (docs/design.md decision 5): with deterministic = true and a seed, each rank's
// element sequence is identical across runs, map parallelism 1/2/8 and read parallelism 1/4.
#include <gtest/gtest.h>

#include "io/pipeline/counter_rng.hpp"
#include "io/pipeline/shard_policy.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace pipeline_determinism_test {

using testing::Drain;
using testing::UnevenFiles;

// A map with a random, element-keyed augmentation: adds a random byte to every byte.
MapFn RandomAugment(uint64_t seed) {
  return [seed](Element& e, const MapContext& ctx) {
    CounterRng rng(seed, static_cast<uint64_t>(ctx.epoch), static_cast<uint64_t>(e.id));
    const Tensor& in = e.Get("bytes");
    Tensor out(DType::kUInt8, in.shape());
    const uint8_t delta = static_cast<uint8_t>(rng.NextU32());
    for (int64_t i = 0; i < in.num_elements(); ++i) {
      out.data<uint8_t>()[i] = static_cast<uint8_t>(in.data<uint8_t>()[i] + delta);
    }
    e.Set("bytes", out);
  };
}

// (id, content hash) per element of two epochs.
std::vector<std::pair<int64_t, uint64_t>> RunPipeline(int rank, int ranks, int calls, int reads) {
  auto source = UnevenFiles(1001, 7);
  ShardPlan plan = PlanShards(source->Files(), true, ShardPolicy::kAuto, ranks, rank);
  auto ds = Dataset::FromRecordSource(
                source, plan, {.cycle_length = 4, .block_length = 2, .num_parallel_reads = reads})
                .Shuffle({.buffer_elements = 64, .seed = 1234})
                .Map(RandomAugment(99), {.num_parallel_calls = calls})
                .Prefetch(3)
                .Repeat(2);
  std::vector<std::pair<int64_t, uint64_t>> out;
  for (const auto& e : Drain(ds)) {
    const Tensor& t = e.Get("bytes");
    out.emplace_back(
        e.id, HashString(std::string(static_cast<const char*>(t.raw_data()), t.byte_size())));
  }
  return out;
}

TEST(PipelineDeterminism, SameSequenceAcrossThreadCountsAndRuns) {
  for (int ranks : {1, 3}) {
    for (int rank = 0; rank < ranks; ++rank) {
      const auto reference = RunPipeline(rank, ranks, 1, 1);
      ASSERT_FALSE(reference.empty());
      for (int calls : {1, 2, 8}) {
        for (int reads : {1, 4}) {
          SCOPED_TRACE("rank " + std::to_string(rank) + "/" + std::to_string(ranks) + " calls " +
                       std::to_string(calls) + " reads " + std::to_string(reads));
          EXPECT_EQ(RunPipeline(rank, ranks, calls, reads), reference);
        }
      }
    }
  }
}

TEST(PipelineDeterminism, EpochsDifferAndSeedsMatter) {
  const auto run = RunPipeline(0, 1, 2, 1);
  const size_t n = run.size() / 2;
  std::vector<std::pair<int64_t, uint64_t>> first(run.begin(), run.begin() + n);
  std::vector<std::pair<int64_t, uint64_t>> second(run.begin() + n, run.end());
  EXPECT_NE(first, second);  // reshuffled and re-augmented each epoch
}

TEST(PipelineDeterminism, PhiloxMatchesPublishedVectors) {
  // Random123 known-answer tests for philox4x32_10.
  EXPECT_EQ(CounterRng::Philox({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(CounterRng::Philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                               {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(CounterRng::Philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                               {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

TEST(PipelineDeterminism, UniformIntIsInRangeAndRoughlyUniform) {
  CounterRng rng(5, 0, 0);
  std::vector<int> counts(7, 0);
  for (int i = 0; i < 70000; ++i) {
    const uint64_t v = rng.UniformInt(7);
    ASSERT_LT(v, 7u);
    counts[v]++;
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 600);
}

}  // namespace pipeline_determinism_test
}  // namespace shardflow::pipeline
