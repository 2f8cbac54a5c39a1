// Iterator state save/restore: resuming from a blob reproduces the rest of the sequence
// exactly, for every stage, at many cut points.
#include <gtest/gtest.h>

#include "io/pipeline/shard_policy.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace pipeline_state_test {

using testing::UnevenFiles;

std::vector<std::string> Texts(PipelineIterator& it, int64_t limit = -1) {
  std::vector<std::string> out;
  Element e;
  while ((limit < 0 || static_cast<int64_t>(out.size()) < limit) && it.Next(&e)) {
    std::string text = std::to_string(e.id) + "|";
    for (const auto& [name, t] : e.features) {
      text += name + ShapeToString(t.shape()) + "=" +
              std::string(static_cast<const char*>(t.raw_data()), t.byte_size()) + ";";
    }
    out.push_back(text);
  }
  return out;
}

void ExpectResumesExactly(const std::function<Dataset()>& build, std::vector<int64_t> cuts) {
  PipelineIterator ref_it = build().MakeIterator();
  const auto reference = Texts(ref_it);
  ASSERT_FALSE(reference.empty());
  cuts.push_back(static_cast<int64_t>(reference.size()));
  for (int64_t cut : cuts) {
    if (cut > static_cast<int64_t>(reference.size())) continue;
    SCOPED_TRACE("cut " + std::to_string(cut));
    PipelineIterator first = build().MakeIterator();
    auto head = Texts(first, cut);
    const std::string blob = first.SaveState();
    // Saving does not disturb the running iterator.
    auto rest_same = Texts(first);
    PipelineIterator resumed = build().MakeIterator();
    resumed.RestoreState(blob);
    auto rest = Texts(resumed);
    EXPECT_EQ(rest, rest_same);
    head.insert(head.end(), rest.begin(), rest.end());
    EXPECT_EQ(head, reference);
  }
}

MapFn AddNoise() {
  return [](Element& e, const MapContext& ctx) {
    Tensor t(DType::kInt64, {});
    *t.data<int64_t>() = e.id * 31 + ctx.epoch;
    e.Set("noise", t);
  };
}

TEST(PipelineState, SequentialStagesResumeExactly) {
  ExpectResumesExactly(
      [] {
        return testing::Range(53)
            .Shuffle({.buffer_elements = 16, .seed = 8})
            .Map(AddNoise())
            .Filter([](const Element& e) { return testing::X(e) % 5 != 0; })
            .Skip(2)
            .Batch(4)
            .Unbatch()
            .Repeat(3)
            .Take(120);
      },
      {0, 1, 7, 40, 41, 60, 119});
}

TEST(PipelineState, ParallelStagesAndInterleaveResumeExactly) {
  for (int reads : {1, 4}) {
    SCOPED_TRACE(reads);
    ExpectResumesExactly(
        [reads] {
          auto source = UnevenFiles(301, 5);
          ShardPlan plan = PlanShards(source->Files(), true, ShardPolicy::kByteRange, 2, 1);
          return Dataset::FromRecordSource(
                     source, plan,
                     {.cycle_length = 3, .block_length = 2, .num_parallel_reads = reads})
              .ShuffleAndRepeat({.buffer_elements = 20, .seed = 2}, 2)
              .Map(AddNoise(), {.num_parallel_calls = 3})
              .Prefetch(4)
              .PaddedBatch(5, false)
              .Prefetch(2);
        },
        {0, 1, 9, 30, 31, 45});
  }
}

// Issue 27.2: a resumed process has an empty memory cache; a state saved while the cache
// replays (any epoch after the first) must refill it and continue exactly.
TEST(PipelineState, MemoryCacheResumesPastTheFirstEpoch) {
  ExpectResumesExactly(
      [] {
        return testing::Range(30)
            .Map(AddNoise())
            .Cache()
            .Shuffle({.buffer_elements = 8, .seed = 3})
            .Repeat(3);
      },
      {0, 12, 30, 31, 47, 60, 61, 89});
}

TEST(PipelineState, MapAndBatchResumesExactly) {
  ExpectResumesExactly(
      [] {
        return testing::Range(77).Repeat(2).MapAndBatch(AddNoise(), 6, false,
                                                        {.num_parallel_calls = 4});
      },
      {0, 1, 12, 13, 25});
}

// With corrupt elements dropped (MapOptions::on_data_loss): a state saved while open batches
// hold dropped rows resumes to the same compacted batches.
TEST(PipelineState, MapAndBatchWithDroppedElementsResumesExactly) {
  ExpectResumesExactly(
      [] {
        MapFn fn = [noise = AddNoise()](Element& e, const MapContext& ctx) {
          if (e.id % 7 == 3) throw Error(ErrorCode::kDataLoss, "corrupt " + std::to_string(e.id));
          noise(e, ctx);
        };
        return testing::Range(77).Repeat(2).MapAndBatch(
            fn, 6, false, {.num_parallel_calls = 4, .on_data_loss = [](const Error&) {}});
      },
      {0, 1, 12, 13, 25});
}

TEST(PipelineState, RejectsForeignOrDamagedBlobs) {
  PipelineIterator a = testing::Range(10).Shuffle({.buffer_elements = 4}).MakeIterator();
  Element e;
  a.Next(&e);
  const std::string blob = a.SaveState();
  PipelineIterator other = testing::Range(11).Shuffle({.buffer_elements = 4}).MakeIterator();
  try {
    other.RestoreState(blob);
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kInvalidArgument) << err.what();
  }
  PipelineIterator same = testing::Range(10).Shuffle({.buffer_elements = 4}).MakeIterator();
  try {
    same.RestoreState(blob.substr(0, blob.size() - 5));
    FAIL() << "expected an error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ErrorCode::kDataLoss) << err.what();
  }
}

}  // namespace pipeline_state_test
}  // namespace shardflow::pipeline
