// The autotuner logs a change once (issue 24, item 2): every epoch's pipeline starts from the
// same settings and makes the same moves, which used to repeat the same info line each epoch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "core/logging.hpp"
#include "io/pipeline/autotune.hpp"
#include "io/pipeline/parallel_map.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace {

// One "epoch": a fresh tuner over a map that spins ~2 ms per element; returns its decisions.
std::vector<std::string> TuneOneEpoch() {
  Autotuner::Options topt;
  topt.cpu_budget = 2;
  topt.interval_s = 3600;  // steps driven by hand below
  topt.log = true;
  auto tuner = std::make_shared<Autotuner>(topt);
  IteratorContext ctx;
  ctx.autotuner = tuner;
  auto spin = [](Element&, const MapContext&) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
    while (std::chrono::steady_clock::now() < end) {
    }
  };
  NodePtr node = MakeMapNode(testing::Range(1000).Repeat().node(), spin,
                             {.name = "spin_log", .num_parallel_calls = kAutotune});
  auto it = node->MakeIterator(ctx);
  Element e;
  for (int step = 0; step < 4 && tuner->Decisions().empty(); ++step) {
    for (int i = 0; i < 40; ++i) EXPECT_TRUE(it->Next(&e));
    tuner->Step();
  }
  it.reset();
  return tuner->Decisions();
}

int CountLines(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  int n = 0;
  for (std::string line; std::getline(in, line);) n += line.find(text) != std::string::npos;
  return n;
}

TEST(PipelineAutotuneLog, TheSameChangeIsLoggedOnce) {
  char path[] = "/tmp/autotune_log_XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  const LogLevel level = GetLogLevel();
  SetLogLevel(LogLevel::kInfo);
  SetLogFileDescriptor(fd);
  const auto first = TuneOneEpoch();
  const auto second = TuneOneEpoch();
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

}  // namespace
}  // namespace shardflow::pipeline
