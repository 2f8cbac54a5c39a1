// Each transformation alone and composed, on in-memory tensor sources.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <stdexcept>

#include "io/pipeline/dataset.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace pipeline_core_test {

using testing::Drain;
using testing::Range;
using testing::X;
using testing::Xs;

std::vector<int64_t> Iota(int64_t begin, int64_t end, int64_t step = 1) {
  std::vector<int64_t> v;
  for (int64_t i = begin; i < end; i += step) v.push_back(i);
  return v;
}

TEST(PipelineCore, TensorSlicesYieldRowsSharingStorage) {
  auto out = Drain(Range(5));
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(Xs(out), Iota(0, 5));
  EXPECT_EQ(out[3].Get("y").shape(), (Shape{2}));
  EXPECT_FLOAT_EQ(out[3].Get("y").data<float>()[0], 6.0f);
  EXPECT_EQ(out[3].id, 3);
  EXPECT_EQ(Range(5).Cardinality(), 5);
}

TEST(PipelineCore, TensorSlicesRejectMismatchedColumns) {
  EXPECT_THROW(
      Dataset::FromTensors({{"a", Tensor(DType::kUInt8, {3})}, {"b", Tensor(DType::kUInt8, {4})}}),
      Error);
  EXPECT_THROW(Dataset::FromTensors({}), Error);
}

TEST(PipelineCore, EmptyAndSingleSources) {
  EXPECT_TRUE(Drain(Range(0)).empty());
  EXPECT_TRUE(Drain(Range(0).Repeat()).empty());  // empty input: repeat ends, no spin
  EXPECT_TRUE(Drain(Range(0).Batch(3)).empty());
  EXPECT_EQ(Drain(Range(1).Batch(3)).size(), 1u);
}

TEST(PipelineCore, TakeSkipFilterShard) {
  EXPECT_EQ(Xs(Drain(Range(10).Take(3))), Iota(0, 3));
  EXPECT_EQ(Xs(Drain(Range(10).Take(30))), Iota(0, 10));
  EXPECT_EQ(Xs(Drain(Range(10).Skip(7))), Iota(7, 10));
  EXPECT_TRUE(Drain(Range(10).Skip(11)).empty());
  EXPECT_EQ(Xs(Drain(Range(10).Filter([](const Element& e) { return X(e) % 3 == 0; }))),
            (std::vector<int64_t>{0, 3, 6, 9}));
  for (int n = 1; n <= 4; ++n) {
    std::vector<int64_t> all;
    for (int i = 0; i < n; ++i) {
      auto part = Xs(Drain(Range(11).Shard(n, i)));
      EXPECT_EQ(part, Iota(i, 11, n));
      EXPECT_EQ(Range(11).Shard(n, i).Cardinality(), static_cast<int64_t>(part.size()));
      all.insert(all.end(), part.begin(), part.end());
    }
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, Iota(0, 11));
  }
  EXPECT_THROW(Range(3).Shard(2, 2), Error);
}

TEST(PipelineCore, RepeatCountsEpochs) {
  auto out = Xs(Drain(Range(3).Repeat(3)));
  EXPECT_EQ(out, (std::vector<int64_t>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Range(3).Repeat(3).Cardinality(), 9);
  EXPECT_EQ(Xs(Drain(Range(3).Repeat().Take(7))).size(), 7u);
  // The epoch reaches map functions.
  std::vector<int64_t> epochs;
  auto ds = Range(2)
                .Map([](Element& e, const MapContext& ctx) {
                  Tensor t(DType::kInt64, {});
                  *t.data<int64_t>() = ctx.epoch;
                  e.Set("epoch", t);
                })
                .Repeat(3);
  for (const auto& e : Drain(ds)) epochs.push_back(*e.Get("epoch").data<int64_t>());
  EXPECT_EQ(epochs, (std::vector<int64_t>{0, 0, 1, 1, 2, 2}));
}

MapFn Square() {
  return [](Element& e, const MapContext&) {
    Tensor t(DType::kInt64, {});
    *t.data<int64_t>() = X(e) * X(e);
    e.Set("sq", t);
  };
}

TEST(PipelineCore, MapSequentialAndParallelAgree) {
  for (int calls : {0, 1, 2, 8}) {
    SCOPED_TRACE(calls);
    auto out = Drain(Range(100).Map(Square(), {.num_parallel_calls = calls}));
    ASSERT_EQ(out.size(), 100u);
    for (int64_t i = 0; i < 100; ++i) {
      EXPECT_EQ(X(out[i]), i);
      EXPECT_EQ(*out[i].Get("sq").data<int64_t>(), i * i);
    }
  }
}

TEST(PipelineCore, NondeterministicMapKeepsEveryElement) {
  auto out = Xs(Drain(Range(300).Map(Square(), {.num_parallel_calls = 4, .deterministic = false})));
  std::sort(out.begin(), out.end());
  EXPECT_EQ(out, Iota(0, 300));
}

TEST(PipelineCore, BatchStacksAndKeepsRemainder) {
  auto out = Drain(Range(10).Batch(4));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].Get("x").shape(), (Shape{4}));
  EXPECT_EQ(out[0].Get("y").shape(), (Shape{4, 2}));
  EXPECT_EQ(out[2].Get("x").shape(), (Shape{2}));
  EXPECT_EQ(out[2].Get("x").data<int64_t>()[1], 9);
  EXPECT_FLOAT_EQ(out[1].Get("y").data<float>()[2], 10.0f);  // element 5, column 0
  EXPECT_EQ(Drain(Range(10).Batch(4, true)).size(), 2u);
  EXPECT_EQ(Range(10).Batch(4, true).Cardinality(), 2);
  EXPECT_EQ(Range(10).Batch(4).Cardinality(), 3);
  EXPECT_THROW(Range(3).Batch(0), Error);
}

TEST(PipelineCore, BatchRejectsShapeChangeNamingFeature) {
  auto ds = Range(4).Map(
      [](Element& e, const MapContext&) { e.Set("v", Tensor(DType::kFloat32, {X(e) + 1})); });
  try {
    Drain(ds.Batch(4));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'v'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("PaddedBatch"), std::string::npos) << e.what();
  }
}

TEST(PipelineCore, PaddedBatchPadsToLargestAndGivenShape) {
  auto ds = Range(3).Map([](Element& e, const MapContext&) {
    const int64_t n = X(e) + 1;
    Tensor v(DType::kInt32, {n});
    for (int64_t i = 0; i < n; ++i) v.data<int32_t>()[i] = static_cast<int32_t>(10 * n + i);
    e.Set("v", v);
  });
  auto out = Drain(ds.PaddedBatch(3, false, {.padding_value = -1}));
  ASSERT_EQ(out.size(), 1u);
  const Tensor& v = out[0].Get("v");
  ASSERT_EQ(v.shape(), (Shape{3, 3}));
  const std::vector<int32_t> want = {10, -1, -1, 20, 21, -1, 30, 31, 32};
  EXPECT_EQ(std::vector<int32_t>(v.data<int32_t>(), v.data<int32_t>() + 9), want);
  auto fixed = Drain(ds.PaddedBatch(2, false, {.padded_shapes = {{"v", {5}}}}));
  EXPECT_EQ(fixed[0].Get("v").shape(), (Shape{2, 5}));
  EXPECT_THROW(Drain(ds.PaddedBatch(3, false, {.padded_shapes = {{"v", {2}}}})), Error);
}

TEST(PipelineCore, PaddedBatchTwoDimensions) {
  auto ds = Range(2).Map([](Element& e, const MapContext&) {
    const int64_t n = X(e) + 1;  // 1x1 then 2x2
    Tensor m(DType::kFloat32, {n, n});
    for (int64_t i = 0; i < n * n; ++i) m.data<float>()[i] = static_cast<float>(i + 1);
    e.Set("m", m);
  });
  auto out = Drain(ds.PaddedBatch(2, false));
  const Tensor& m = out[0].Get("m");
  ASSERT_EQ(m.shape(), (Shape{2, 2, 2}));
  const std::vector<float> want = {1, 0, 0, 0, 1, 2, 3, 4};
  EXPECT_EQ(std::vector<float>(m.data<float>(), m.data<float>() + 8), want);
}

TEST(PipelineCore, UnbatchInvertsBatch) {
  auto out = Drain(Range(10).Batch(3).Unbatch());
  EXPECT_EQ(Xs(out), Iota(0, 10));
  EXPECT_EQ(testing::Ids(out), Iota(0, 10));
}

TEST(PipelineCore, MapAndBatchEqualsMapThenBatch) {
  for (int calls : {1, 2, 8}) {
    for (bool drop : {false, true}) {
      SCOPED_TRACE(std::to_string(calls) + (drop ? " drop" : ""));
      auto fused = Drain(Range(23).MapAndBatch(Square(), 5, drop, {.num_parallel_calls = calls}));
      auto plain = Drain(Range(23).Map(Square()).Batch(5, drop));
      ASSERT_EQ(fused.size(), plain.size());
      for (size_t b = 0; b < fused.size(); ++b) {
        const Tensor& f = fused[b].Get("sq");
        const Tensor& p = plain[b].Get("sq");
        ASSERT_EQ(f.shape(), p.shape());
        EXPECT_TRUE(
            std::equal(f.data<int64_t>(), f.data<int64_t>() + f.num_elements(), p.data<int64_t>()));
        EXPECT_EQ(fused[b].Get("y").shape(), plain[b].Get("y").shape());
      }
    }
  }
  EXPECT_TRUE(Drain(Range(0).MapAndBatch(Square(), 4, false, {.num_parallel_calls = 2})).empty());
  EXPECT_TRUE(Drain(Range(3).MapAndBatch(Square(), 4, true, {.num_parallel_calls = 2})).empty());
}

// Workers claim runs of batch_size / workers elements; runs never cross a batch, so any batch
// size (1, a remainder, larger than the data) and worker count gives map(...).batch(B).
TEST(PipelineCore, MapAndBatchRunsEqualMapThenBatch) {
  for (int64_t size : {1, 3, 64, 256, 1500}) {
    for (int calls : {1, 2, 3, 8}) {
      for (bool drop : {false, true}) {
        SCOPED_TRACE(std::to_string(size) + " x" + std::to_string(calls) + (drop ? " drop" : ""));
        auto fused =
            Drain(Range(1000).MapAndBatch(Square(), size, drop, {.num_parallel_calls = calls}));
        auto plain = Drain(Range(1000).Map(Square()).Batch(size, drop));
        ASSERT_EQ(fused.size(), plain.size());
        for (size_t b = 0; b < fused.size(); ++b) {
          EXPECT_EQ(fused[b].id, plain[b].id);
          const Tensor& f = fused[b].Get("sq");
          const Tensor& p = plain[b].Get("sq");
          ASSERT_EQ(f.shape(), p.shape());
          ASSERT_TRUE(std::equal(f.data<int64_t>(), f.data<int64_t>() + f.num_elements(),
                                 p.data<int64_t>()));
        }
      }
    }
  }
}

TEST(PipelineCore, PrefetchPreservesOrder) {
  EXPECT_EQ(Xs(Drain(Range(50).Prefetch(1))), Iota(0, 50));
  EXPECT_EQ(
      Xs(Drain(Range(50).Prefetch(8).Map(Square(), {.num_parallel_calls = 2}).Prefetch(kAutotune))),
      Iota(0, 50));
  EXPECT_THROW(Range(3).Prefetch(0), Error);
}

TEST(PipelineCore, DestroyingMidStreamDoesNotHang) {
  testing::WithinSeconds(30, "destroy mid-stream", [] {
    for (int i = 0; i < 20; ++i) {
      auto ds = Range(1000)
                    .Repeat()
                    .Map(Square(), {.num_parallel_calls = 3})
                    .Prefetch(4)
                    .MapAndBatch(Square(), 7, false, {.num_parallel_calls = 2})
                    .Prefetch(2);
      PipelineIterator it = ds.MakeIterator();
      Element e;
      for (int k = 0; k < i; ++k) ASSERT_TRUE(it.Next(&e));
    }
  });
}

TEST(PipelineCore, StatsCountElementsPerStage) {
  PipelineIterator it = Range(40)
                            .Map(Square(), {.name = "square", .num_parallel_calls = 2})
                            .Batch(8)
                            .Prefetch(2)
                            .MakeIterator();
  Element e;
  int batches = 0;
  while (it.Next(&e)) ++batches;
  EXPECT_EQ(batches, 5);
  bool saw_square = false, saw_batch = false;
  for (const auto& s : it.stats().Snapshot()) {
    if (s.name == "square") {
      saw_square = true;
      EXPECT_EQ(s.elements, 40);
      EXPECT_EQ(s.parallelism, 2);
      EXPECT_GT(s.bytes, 0);
    }
    if (s.name == "batch") {
      saw_batch = true;
      EXPECT_EQ(s.elements, 5);
    }
  }
  EXPECT_TRUE(saw_square && saw_batch);
  const std::string line = it.StatsSummary();
  EXPECT_NE(line.find("square: 40 el"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

// Cheap calls of a consumer-thread stage are timed one in SequentialIterator::kSamplePeriod,
// each standing for the calls it skips, and so are the pulls of a long call (a batch): the
// element counts stay exact, and busy and input-wait times are still at least what the stage
// demonstrably spent (every map call spins `us` microseconds).
TEST(PipelineCore, SampledStageTimingCountsEveryCall) {
  const int64_t n = 64 * SequentialIterator::kSamplePeriod;  // whole sampling periods
  for (const int us : {2, 20}) {  // 2: sampled calls; 20: over 10 us, every call timed
    auto spin = [us](Element&, const MapContext&) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
      while (std::chrono::steady_clock::now() < until) {
      }
    };
    PipelineIterator it = Range(n).Map(spin, {.name = "spin"}).Batch(64).MakeIterator();
    Element e;
    int64_t batches = 0;
    while (it.Next(&e)) ++batches;
    ASSERT_EQ(batches, n / 64);
    const double spent = us * 1e-6 * static_cast<double>(n) * 0.99;
    int seen = 0;
    for (const auto& s : it.stats().Snapshot()) {
      if (s.name == "spin") {
        ++seen;
        EXPECT_EQ(s.elements, n);
        EXPECT_GE(s.busy_s, spent) << us << " us per call";
      } else if (s.name == "batch") {
        ++seen;
        EXPECT_EQ(s.elements, n / 64);
        EXPECT_GE(s.input_wait_s, spent) << us << " us per call";  // its pulls are sampled
      }
    }
    EXPECT_EQ(seen, 2);
  }
}

TEST(PipelineCore, CardinalityPropagates) {
  EXPECT_EQ(Range(10).Map(Square()).Take(4).Cardinality(), 4);
  EXPECT_EQ(Range(10).Repeat().Cardinality(), DatasetNode::kInfiniteCardinality);
  EXPECT_EQ(Range(10).Repeat().Take(25).Cardinality(), 25);
  EXPECT_EQ(Range(10).Filter([](const Element&) { return true; }).Cardinality(),
            DatasetNode::kUnknownCardinality);
}

}  // namespace pipeline_core_test
}  // namespace shardflow::pipeline
