#include "core/logging.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace logging_test {

TEST(LoggingTest, ParsesLevels) {
  EXPECT_EQ(ParseLogLevel("ERROR"), LogLevel::kError);
  EXPECT_EQ(ParseLogLevel("warn"), LogLevel::kWarn);
  EXPECT_EQ(ParseLogLevel("Info"), LogLevel::kInfo);
  EXPECT_EQ(ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_THROW(ParseLogLevel("loud"), Error);
}

TEST(LoggingTest, BadEnvironmentValueNamesTheVariable) {
  setenv("SHARDFLOW_LOG_LEVEL", "verbose", 1);
  try {
    InitLoggingFromEnvironment();
    FAIL() << "expected a throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SHARDFLOW_LOG_LEVEL"), std::string::npos);
  }
  unsetenv("SHARDFLOW_LOG_LEVEL");
}

TEST(LoggingTest, ThreadsWriteWholeLinesAndLevelsFilter) {
  testing::ScratchDir dir("logging");
  const auto path = dir / "log.txt";
  FILE* file = std::fopen(path.c_str(), "w");
  ASSERT_NE(file, nullptr);
  SetLogFileDescriptor(fileno(file));
  SetLogRank(5);
  SetLogLevel(LogLevel::kInfo);
  constexpr int kThreads = 8;
  constexpr int kLines = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) {
        SF_LOG(Info) << "thread=" << t << " i=" << i << ' ' << std::string(i % 200, 'x') << " end";
        SF_LOG(Debug) << "hidden";
      }
    });
  }
  for (auto& th : threads) th.join();
  SF_LOG0(Info) << "rank five is not rank zero";
  SetLogFileDescriptor(STDERR_FILENO);
  SetLogRank(-1);
  std::fclose(file);

  std::ifstream in(path);
  const std::regex line_re(R"(^\[r5 I [0-9]+\.[0-9]{3}\] thread=[0-9] i=[0-9]+ x* end$)");
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    ASSERT_TRUE(std::regex_match(line, line_re)) << "broken line: " << line;
    ++count;
  }
  EXPECT_EQ(count, kThreads * kLines);
}

}  // namespace logging_test
}  // namespace shardflow
