// The autotuner's "starved" figure is a fraction of the interval, at most 100% (issue 20, item
// 16): a consumer's wait was counted when it ended, all in the interval it ended in, so a long
// wait over a short interval read "starved 7340%".
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "io/pipeline/autotune.hpp"
#include "io/pipeline/parallel_map.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace autotune_starved_test {

// The percentages after `label` ("starved 42%") in every decision.
std::vector<double> Percentages(const std::vector<std::string>& decisions,
                                const std::string& label) {
  std::vector<double> out;
  for (const std::string& d : decisions) {
    const size_t at = d.find(label + " ");
    if (at != std::string::npos) out.push_back(std::atof(d.c_str() + at + label.size() + 1));
  }
  return out;
}

TEST(PipelineAutotune, StarvedAndUtilAreAtMostAllOfTheInterval) {
  Autotuner::Options topt;
  topt.cpu_budget = 4;
  topt.interval_s = 3600;  // stepped by hand below
  topt.log = false;
  auto tuner = std::make_shared<Autotuner>(topt);
  IteratorContext ctx;
  ctx.autotuner = tuner;
  auto slow = [](Element&, const MapContext&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  };
  NodePtr node = MakeMapNode(testing::Range(1000).Repeat().node(), slow,
                             {.name = "slow", .num_parallel_calls = kAutotune});
  auto it = node->MakeIterator(ctx);
  Element e;
  for (int round = 0; round < 3; ++round) {
    tuner->Step();
    // The consumer waits ~150 ms for an element while the tuner steps every ~10 ms; the last
    // step comes right after the wait ends.
    std::thread consumer([&] { EXPECT_TRUE(it->Next(&e)); });
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      tuner->Step();
    }
    consumer.join();
    tuner->Step();
  }
  it.reset();
  const std::vector<std::string> decisions = tuner->Decisions();
  ASSERT_FALSE(decisions.empty()) << "the starved stage was never tuned";
  for (const double p : Percentages(decisions, "starved")) EXPECT_LE(p, 100.0);
  for (const double p : Percentages(decisions, "util")) EXPECT_LE(p, 100.0);
  for (const std::string& d : decisions) SCOPED_TRACE(d);
}

}  // namespace autotune_starved_test
}  // namespace shardflow::pipeline
