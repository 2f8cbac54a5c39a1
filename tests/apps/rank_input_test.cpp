// The training loop's input (apps/train/rank_input.hpp): epoch maps, the saved form, and the
// elastic plan over in-memory "records" whose ids are their values.
#include "apps/train/rank_input.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "io/pipeline/data_options.hpp"
#include "io/pipeline/dataset.hpp"

namespace shardflow::train {
namespace rank_input_test {

using pipeline::Dataset;

Tensor Ids(const std::vector<int64_t>& ids) {
  Tensor t(DType::kInt64, {static_cast<int64_t>(ids.size())});
  std::copy(ids.begin(), ids.end(), t.data<int64_t>());
  return t;
}

// `n` records 0..n-1; rank r of `world` reads i % world == r, in order (one pass); with
// weights w, i % sum(w) in [w_0 + .. + w_{r-1}, + w_r) (as the record shard policy).
InputFactories Factories(int64_t n) {
  InputFactories f;
  f.regular = [n](int rank, int world, int64_t batch, const std::vector<int64_t>& weights) {
    std::vector<int64_t> w = weights;
    if (w.empty()) w.assign(static_cast<size_t>(world), 1);
    const int64_t total = std::accumulate(w.begin(), w.end(), int64_t{0});
    const int64_t from = std::accumulate(w.begin(), w.begin() + rank, int64_t{0});
    std::vector<int64_t> mine;
    for (int64_t i = 0; i < n; ++i) {
      if (i % total >= from && i % total < from + w[static_cast<size_t>(rank)]) mine.push_back(i);
    }
    return Dataset::FromTensors({{pipeline::kRowIdFeature, Ids(mine)}}).Batch(batch, false);
  };
  f.records = [](std::shared_ptr<const std::vector<int64_t>> ids, int64_t batch) {
    return Dataset::FromTensors({{pipeline::kRowIdFeature, Ids(*ids)}}).Batch(batch, false);
  };
  return f;
}

std::vector<int64_t> RowsOf(const pipeline::Element& batch) {
  const Tensor& t = batch.Get(pipeline::kRowIdFeature);
  return {t.data<int64_t>(), t.data<int64_t>() + t.num_elements()};
}

TEST(EpochMap, RegularEpochs) {
  EpochMap m;
  m.steps_per_epoch = 10;
  EXPECT_EQ(m.EpochOf(0), 0);
  EXPECT_EQ(m.EpochOf(19), 1);
  EXPECT_TRUE(m.EpochEnd(9));
  EXPECT_FALSE(m.EpochEnd(10));
  EXPECT_EQ(m.PlannedSteps(3), 30);
}

TEST(EpochMap, RemainderThenRegular) {
  const EpochMap m{.rem_begin = 13,
                   .rem_end = 20,
                   .rem_epoch = 1,
                   .reg_begin = 20,
                   .reg_epoch = 2,
                   .steps_per_epoch = 4};
  EXPECT_EQ(m.EpochOf(13), 1);
  EXPECT_EQ(m.EpochOf(19), 1);
  EXPECT_TRUE(m.EpochEnd(19));
  EXPECT_FALSE(m.EpochEnd(18));
  EXPECT_EQ(m.EpochOf(20), 2);
  EXPECT_TRUE(m.EpochEnd(23));
  EXPECT_EQ(m.EpochOf(24), 3);
  EXPECT_EQ(m.PlannedSteps(4), 28);  // epochs 2 and 3 after step 20
}

TEST(SavedInput, RoundTripsAndReadsOlderStates) {
  SavedInput s;
  s.world = 3;
  s.per_rank_batch = 8;
  s.lr_scale = 0.5;
  s.map = {.rem_begin = 5,
           .rem_end = 9,
           .rem_epoch = 1,
           .reg_begin = 9,
           .reg_epoch = 2,
           .steps_per_epoch = 7};
  s.remainder_ids = {4, 8, 15};
  s.in_remainder = true;
  s.pipeline = std::string("state\0bytes", 11);
  const SavedInput back = DecodeSavedInput(EncodeSavedInput(s));
  EXPECT_EQ(back.world, 3);
  EXPECT_EQ(back.per_rank_batch, 8);
  EXPECT_EQ(back.lr_scale, 0.5);
  EXPECT_EQ(back.map.rem_end, 9);
  EXPECT_EQ(back.map.steps_per_epoch, 7);
  EXPECT_EQ(back.remainder_ids, s.remainder_ids);
  EXPECT_TRUE(back.in_remainder);
  EXPECT_EQ(back.pipeline, s.pipeline);
  // Before elastic resume a rank's state was the iterator state alone.
  const SavedInput old = DecodeSavedInput("iterator state");
  EXPECT_EQ(old.world, -1);
  EXPECT_EQ(old.pipeline, "iterator state");
  std::string cut = EncodeSavedInput(s);
  cut.resize(cut.size() - 3);
  EXPECT_THROW(DecodeSavedInput(cut), Error);
}

// Old ranks train `steps` steps of a `old_world`-rank run, save; the new ranks plan the rest.
struct Elastic {
  std::map<int64_t, int> trained;  // record -> times, in the interrupted epoch
  std::vector<ElasticStart> starts;
};

// Uneven batches (a global batch that does not divide): the old ranks' shards follow them.
Elastic Simulate(int64_t n, const std::vector<int64_t>& old_batches, int64_t steps,
                 const std::vector<int64_t>& batches) {
  const InputFactories f = Factories(n);
  const int old_world = static_cast<int>(old_batches.size());
  const bool uneven = *std::min_element(old_batches.begin(), old_batches.end()) !=
                      *std::max_element(old_batches.begin(), old_batches.end());
  const std::vector<int64_t> weights = uneven ? old_batches : std::vector<int64_t>{};
  const int64_t old_global = std::accumulate(old_batches.begin(), old_batches.end(), int64_t{0});
  EpochMap map;
  map.steps_per_epoch = n / old_global;  // n divides in the tests
  Elastic out;
  std::vector<std::string> states;
  for (int r = 0; r < old_world; ++r) {
    const int64_t old_batch = old_batches[static_cast<size_t>(r)];
    RankInput in(f, f.regular(r, old_world, old_batch, weights), map, 0, {}, old_batch, nullptr);
    pipeline::Element batch;
    for (int64_t s = 0; s < steps; ++s) {
      EXPECT_TRUE(in.Next(s, &batch));
      if (map.EpochOf(s) == map.EpochOf(steps)) {
        for (int64_t id : RowsOf(batch)) ++out.trained[id];
      }
    }
    states.push_back(EncodeSavedInput(in.Save(steps, old_world, 1.0)));
  }
  const int world = static_cast<int>(batches.size());
  const int64_t spe = n / std::accumulate(batches.begin(), batches.end(), int64_t{0});
  for (int j = 0; j < world; ++j) {
    out.starts.push_back(PlanElasticResume(f, states, steps, j, batches, /*global_batch=*/true,
                                           /*lr_scaled_by_ranks=*/false, spe));
    for (int64_t id : out.starts.back().ids) ++out.trained[id];
  }
  return out;
}

Elastic Simulate(int64_t n, int old_world, int64_t old_batch, int64_t steps, int world,
                 int64_t batch) {
  return Simulate(n, std::vector<int64_t>(static_cast<size_t>(old_world), old_batch), steps,
                  std::vector<int64_t>(static_cast<size_t>(world), batch));
}

TEST(ElasticResume, ShrinkContinuesTheEpochWithEveryRecordOnce) {
  const Elastic e = Simulate(240, 4, 6, 13, 2, 12);  // epoch 1, 3 steps in
  ASSERT_EQ(e.trained.size(), 240u);
  for (const auto& [id, times] : e.trained) EXPECT_EQ(times, 1) << "record " << id;
  for (const ElasticStart& s : e.starts) {
    EXPECT_EQ(s.map.rem_begin, 13);
    EXPECT_EQ(s.map.rem_end, 20);  // 168 records / 24 per step
    EXPECT_EQ(s.map.reg_epoch, 2);
    EXPECT_EQ(s.left_out, 0);
    EXPECT_EQ(s.ids.size(), 84u);
  }
}

TEST(ElasticResume, UnevenLastStepSplitsEvenlyAndLeavesOutFewerThanARank) {
  // 3 ranks x batch 8, 10 steps an epoch; stopped 1 step in: 216 left. On 5 ranks x 7 = 35 a
  // step: 6 full steps (210), then 6 rows for 5 ranks: one or two each.
  const Elastic grow = Simulate(240, 3, 8, 11, 5, 7);
  EXPECT_EQ(grow.trained.size(), 240u);
  for (const ElasticStart& s : grow.starts) {
    EXPECT_EQ(s.map.rem_end - s.map.rem_begin, 7);
    EXPECT_GE(s.ids.size(), 43u);
    EXPECT_LE(s.ids.size(), 44u);
  }
  // 216 left on 7 ranks x 10 = 70 a step: 3 steps (210), 6 rows < 7 ranks: left out.
  const Elastic tail = Simulate(240, 3, 8, 11, 7, 10);
  EXPECT_EQ(tail.trained.size(), 234u);
  for (const auto& [id, times] : tail.trained) EXPECT_EQ(times, 1) << "record " << id;
  for (const ElasticStart& s : tail.starts) {
    EXPECT_EQ(s.left_out, 6);
    EXPECT_EQ(s.map.rem_end - s.map.rem_begin, 3);
  }
}

TEST(ElasticResume, AtAnEpochEndStartsTheNextEpochFresh) {
  const Elastic e = Simulate(240, 4, 6, 20, 3, 8);
  for (const ElasticStart& s : e.starts) {
    EXPECT_TRUE(s.ids.empty());
    EXPECT_EQ(s.map.reg_begin, 20);
    EXPECT_EQ(s.map.reg_epoch, 2);
    EXPECT_EQ(s.map.rem_end, s.map.rem_begin);
  }
}

TEST(ElasticResume, UnevenBatchesKeepTheGlobalBatchAndEveryRecordOnce) {
  // 4 ranks x 6 stopped 1 step into epoch 1 (216 left); on 5 ranks the global batch 24 is
  // 5+5+5+5+4: 9 full steps, each rank its own batch a step.
  const Elastic grow = Simulate(240, {6, 6, 6, 6}, 11, {5, 5, 5, 5, 4});
  ASSERT_EQ(grow.trained.size(), 240u);
  for (const auto& [id, times] : grow.trained) EXPECT_EQ(times, 1) << "record " << id;
  for (size_t j = 0; j < grow.starts.size(); ++j) {
    EXPECT_EQ(grow.starts[j].map.rem_end - grow.starts[j].map.rem_begin, 9);
    EXPECT_EQ(grow.starts[j].ids.size(), j < 4 ? 45u : 36u);
    EXPECT_EQ(grow.starts[j].left_out, 0);
  }
  EXPECT_NE(grow.starts[0].summary.find("per-rank batch 6 -> 4..5 (global 24 -> 24)"),
            std::string::npos)
      << grow.starts[0].summary;
  // And from the uneven run (its shards by weight) back to 4 ranks, from inside epoch 1.
  const Elastic shrink = Simulate(240, {5, 5, 5, 5, 4}, 12, {6, 6, 6, 6});
  ASSERT_EQ(shrink.trained.size(), 240u);
  for (const auto& [id, times] : shrink.trained) EXPECT_EQ(times, 1) << "record " << id;
}

TEST(ElasticResume, UnevenLastStepGivesEveryRankARowWithinItsBatch) {
  // 2 ranks x 5 stopped 8 steps in: 170 left. On 7 ranks with global batch 9 (2,2,1,1,1,1,1):
  // 18 full steps and a last one of 8 rows; split evenly that would give rank 6 two rows, more
  // than its batch: the extra one goes to rank 0.
  const std::vector<int64_t> batches = {2, 2, 1, 1, 1, 1, 1};
  const Elastic e = Simulate(250, {5, 5}, 8, batches);
  ASSERT_EQ(e.trained.size(), 250u);
  for (const auto& [id, times] : e.trained) EXPECT_EQ(times, 1) << "record " << id;
  const std::vector<size_t> want = {38, 37, 19, 19, 19, 19, 19};
  for (size_t j = 0; j < batches.size(); ++j) {
    EXPECT_EQ(e.starts[j].left_out, 0);
    EXPECT_EQ(e.starts[j].map.rem_end - e.starts[j].map.rem_begin, 19);
    EXPECT_EQ(e.starts[j].ids.size(), want[j]) << "rank " << j;
  }
}

TEST(ElasticResume, RefusesStatesFromBeforeElasticResume) {
  EXPECT_THROW(
      PlanElasticResume(Factories(8), {"old state", "old state"}, 3, 0, {4}, true, false, 2),
      Error);
}

}  // namespace rank_input_test
}  // namespace shardflow::train
