// Iterator::Peek: a non-blocking look at the element the next Next() returns, held by a
// read-ahead stage, that consumes nothing and leaves the saved state as it was.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "io/pipeline/step_count.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace pipeline_peek_test {

using testing::Range;
using testing::WithinSeconds;

// Peeks until the read-ahead stage holds the next element (it fills in the background).
bool PeekSoon(PipelineIterator& it, Element* out) {
  for (int i = 0; i < 20000; ++i) {
    if (it.Peek(out)) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return false;
}

std::vector<int64_t> FirstColumn(const Element& e) {
  const Tensor& x = e.Get("x");
  return std::vector<int64_t>(x.data<int64_t>(), x.data<int64_t>() + x.num_elements());
}

TEST(PipelinePeek, ThePeekedElementIsTheNextOneItsTensorsSharedAndNothingIsConsumed) {
  WithinSeconds(60, "peek", [] {
    const Dataset ds = Range(50).Batch(4).Prefetch(3);
    const std::vector<Element> reference = testing::Drain(ds);
    PipelineIterator it = ds.MakeIterator();
    Element first;
    ASSERT_TRUE(it.Next(&first));  // Peek starts nothing: the first element comes by Next
    EXPECT_EQ(FirstColumn(first), FirstColumn(reference[0]));
    for (size_t i = 1; i < reference.size(); ++i) {
      const Element& want = reference[i];
      Element peeked, again, got;
      ASSERT_TRUE(PeekSoon(it, &peeked));
      ASSERT_TRUE(it.Peek(&again));  // peeking twice gives the same element
      ASSERT_TRUE(it.Next(&got));
      EXPECT_EQ(FirstColumn(got), FirstColumn(want));
      EXPECT_EQ(peeked.Get("x").raw_data(), got.Get("x").raw_data());
      EXPECT_EQ(again.Get("x").raw_data(), got.Get("x").raw_data());
    }
    Element e;
    EXPECT_FALSE(it.Peek(&e));
    EXPECT_FALSE(it.Next(&e));
  });
}

TEST(PipelinePeek, AStateSavedAfterAPeekResumesWithThePeekedElement) {
  WithinSeconds(60, "peek state", [] {
    const Dataset ds = Range(37).Batch(5).Prefetch(2);
    const std::vector<Element> reference = testing::Drain(ds);
    for (size_t cut = 1; cut < reference.size(); ++cut) {
      PipelineIterator it = ds.MakeIterator();
      Element e;
      for (size_t i = 0; i < cut; ++i) ASSERT_TRUE(it.Next(&e));
      ASSERT_TRUE(PeekSoon(it, &e));
      const std::string blob = it.SaveState();
      PipelineIterator resumed = ds.MakeIterator();
      resumed.RestoreState(blob);
      for (size_t i = cut; i < reference.size(); ++i) {
        ASSERT_TRUE(resumed.Next(&e)) << "cut " << cut;
        EXPECT_EQ(FirstColumn(e), FirstColumn(reference[i])) << "cut " << cut << " element " << i;
      }
      EXPECT_FALSE(resumed.Next(&e));
    }
  });
}

// Through the training loop's wrappers: a pass limited to its agreed steps, repeated. Within
// a pass the next batch can be peeked; past the agreed steps, or before a pass has begun,
// nothing is.
TEST(PipelinePeek, ThroughLimitStepsAndRepeatWithinAPass) {
  WithinSeconds(60, "peek limit", [] {
    auto report = std::make_shared<StepLimitReport>();
    const Dataset ds = LimitSteps(Range(20).Batch(4).Prefetch(2), 3, report).Repeat(2);
    PipelineIterator it = ds.MakeIterator();
    Element e, peeked;
    EXPECT_FALSE(it.Peek(&e));  // no pass has begun
    for (int pass = 0; pass < 2; ++pass) {
      for (int step = 0; step < 3; ++step) {
        ASSERT_TRUE(it.Next(&e));
        EXPECT_EQ(FirstColumn(e)[0], 4 * step);
        if (step < 2) {
          ASSERT_TRUE(PeekSoon(it, &peeked));
          EXPECT_EQ(FirstColumn(peeked)[0], 4 * (step + 1));
        } else {
          EXPECT_FALSE(it.Peek(&peeked)) << "peeked past the agreed steps";
        }
      }
    }
    EXPECT_FALSE(it.Next(&e));
  });
}

// Before the first Next a peek reads nothing and starts nothing: a Restore still works.
TEST(PipelinePeek, BeforeTheFirstNextNothingIsPeekedAndRestoreStillWorks) {
  WithinSeconds(60, "peek first", [] {
    const Dataset ds = Range(30).Batch(4).Prefetch(2);
    PipelineIterator source = ds.MakeIterator();
    Element e;
    ASSERT_TRUE(source.Next(&e));
    ASSERT_TRUE(source.Next(&e));
    const std::string blob = source.SaveState();
    PipelineIterator it = ds.MakeIterator();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_FALSE(it.Peek(&e));
    it.RestoreState(blob);
    ASSERT_TRUE(it.Next(&e));
    EXPECT_EQ(FirstColumn(e)[0], 8);
  });
}

// Stages that cannot tell what comes next say so.
TEST(PipelinePeek, NondeterministicAndSequentialStagesPeekNothing) {
  WithinSeconds(60, "peek none", [] {
    const MapFn same = [](Element&, const MapContext&) {};
    const Dataset unordered =
        Range(40).Map(same, {.num_parallel_calls = 2, .deterministic = false}).Batch(4);
    const Dataset after = Range(40).Batch(4).Prefetch(2).Map(same);
    for (const Dataset& ds : {unordered, after}) {
      PipelineIterator it = ds.MakeIterator();
      Element e;
      ASSERT_TRUE(it.Next(&e));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      EXPECT_FALSE(it.Peek(&e));
    }
  });
}

}  // namespace pipeline_peek_test
}  // namespace shardflow::pipeline
