#include "core/progress.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>
#include <string>

namespace shardflow {
namespace progress_test {

// A reporter on a fake clock writing to a string.
struct Fixture {
  double now = 0;
  std::ostringstream out;
  ProgressOptions Options(ProgressOptions::Mode mode = ProgressOptions::Mode::kPlain) {
    ProgressOptions options;
    options.label = "train";
    options.unit = "samples";
    options.print_interval_seconds = 10;
    options.mode = mode;
    options.stream = &out;
    options.clock = [this] { return now; };
    options.rank = 0;
    return options;
  }
};

TEST(ProgressTest, PlainLinesArePeriodicWithWindowRatesAndAFinalLine) {
  Fixture f;
  ProgressReporter progress(100, f.Options());
  EXPECT_TRUE(progress.active());
  EXPECT_FALSE(progress.terminal());
  for (int i = 1; i <= 40; ++i) {
    f.now = 0.5 * i;
    progress.SetMetric("loss", 1.0 / i);
    progress.Advance(1, 32);
  }
  // The second half runs at a different speed: 10 steps in 10 s.
  for (int i = 41; i <= 50; ++i) {
    f.now = 20.0 + (i - 40);
    progress.Advance(1, 32);
  }
  f.now = 32;
  progress.Finish();
  progress.Finish();
  progress.Advance(5, 5);
  EXPECT_EQ(f.out.str(),
            "train: step 20/100 (20.0%) | 2.00 steps/s | 64.0 samples/s | elapsed 10s | ETA 40s "
            "| loss=0.05\n"
            "train: step 40/100 (40.0%) | 2.00 steps/s | 64.0 samples/s | elapsed 20s | ETA 30s "
            "| loss=0.025\n"
            "train: step 50/100 (50.0%) | 1.00 steps/s | 32.0 samples/s | elapsed 30s | ETA 50s "
            "| loss=0.025\n"
            "train: stopped at 50/100 steps in 32s | 1.56 steps/s | 50.0 samples/s | loss=0.025\n");
  EXPECT_EQ(progress.steps_done(), 50);
}

TEST(ProgressTest, UnknownTotalAndNoUnit) {
  Fixture f;
  ProgressOptions options = f.Options();
  options.unit = "";
  options.label = "eval";
  ProgressReporter progress(0, options);
  f.now = 10;
  progress.Advance(7);
  f.now = 70;
  progress.Advance(3);
  f.now = 80;
  progress.Finish();
  EXPECT_EQ(f.out.str(),
            "eval: step 7 | 0.700 steps/s | elapsed 10s\n"
            "eval: step 10 | 0.050 steps/s | elapsed 1m10s\n"
            "eval: done 10 steps in 1m20s | 0.125 steps/s\n");
}

TEST(ProgressTest, ZeroStepsAndSetAfterResume) {
  Fixture f;
  ProgressReporter progress(1000, f.Options());
  f.now = 0;
  progress.Finish();  // nothing done, no time passed: rates print as 0, no division by zero
  EXPECT_EQ(f.out.str(), "train: stopped at 0/1000 steps in 0s | 0 steps/s | 0 samples/s\n");

  Fixture g;
  ProgressReporter resumed(1000, g.Options());
  resumed.StartAt(500, 16000);  // resumed at step 500: only later work counts in the rates
  g.now = 10;
  resumed.Advance(10, 320);
  EXPECT_EQ(g.out.str(),
            "train: step 510/1000 (51.0%) | 1.00 steps/s | 32.0 samples/s | elapsed 10s | ETA "
            "8m10s\n");
  g.now = 20;
  resumed.Finish();
  EXPECT_NE(
      g.out.str().find("train: stopped at 510/1000 steps in 20s | 0.500 steps/s | 16.0 samples/s"),
      std::string::npos)
      << g.out.str();
}

TEST(ProgressTest, OtherRanksAreSilent) {
  Fixture f;
  ProgressOptions options = f.Options();
  options.rank = 1;
  ProgressReporter progress(10, options);
  EXPECT_FALSE(progress.active());
  for (int i = 0; i < 10; ++i) {
    f.now += 100;
    progress.Advance();
  }
  progress.Finish();
  EXPECT_EQ(f.out.str(), "");
}

TEST(ProgressTest, TerminalModeRedrawsOneLineWithABar) {
  Fixture f;
  ProgressOptions options = f.Options(ProgressOptions::Mode::kTerminal);
  options.bar_width = 10;
  options.redraw_interval_seconds = 1;
  {
    ProgressReporter progress(4, options);
    EXPECT_TRUE(progress.terminal());
    f.now = 1;
    progress.Advance(1, 8);
    f.now = 1.5;  // within the redraw interval: no redraw
    progress.Advance(1, 8);
    f.now = 2;
    progress.SetMetric("loss", 0.5);
    progress.Advance(1, 8);
    f.now = 4;
    progress.Advance(1, 8);
    progress.Finish();
  }
  EXPECT_EQ(f.out.str(),
            "\rtrain [==>       ]  25.0% 1/4 | 1.00 steps/s | 8.00 samples/s | ETA 3s\x1b[K"
            "\rtrain [=======>  ]  75.0% 3/4 | 1.50 steps/s | 12.0 samples/s | ETA 0s | "
            "loss=0.5\x1b[K"
            "\rtrain [==========] 100.0% 4/4 | 1.00 steps/s | 8.00 samples/s | ETA 0s | "
            "loss=0.5\x1b[K"
            "\rtrain [==========] 100.0% 4/4 | 1.00 steps/s | 8.00 samples/s | 4s | "
            "loss=0.5\x1b[K\n");
}

TEST(ProgressTest, TerminalLineLeftOpenIsEndedByTheDestructor) {
  Fixture f;
  {
    ProgressReporter progress(4, f.Options(ProgressOptions::Mode::kTerminal));
    f.now = 1;
    progress.Advance();
  }
  const std::string out = f.out.str();
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.front(), '\r');
  EXPECT_EQ(out.back(), '\n');
}

TEST(ProgressTest, WritesToAFileDescriptorAndDetectsNonTerminal) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  double now = 0;
  ProgressOptions options;
  options.label = "p";
  options.fd = fds[1];
  options.clock = [&] { return now; };
  options.rank = 0;
  {
    ProgressReporter progress(2, options);
    EXPECT_FALSE(progress.terminal());  // a pipe is not a terminal
    now = 2;
    progress.Advance(2);
    progress.Finish();
  }
  ::close(fds[1]);
  std::string text;
  char buffer[256];
  ssize_t n;
  while ((n = ::read(fds[0], buffer, sizeof(buffer))) > 0) text.append(buffer, n);
  ::close(fds[0]);
  EXPECT_EQ(text, "p: done 2/2 steps in 2s | 1.00 steps/s\n");
}

TEST(ProgressTest, FormatDuration) {
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(59.9), "59s");
  EXPECT_EQ(FormatDuration(61), "1m01s");
  EXPECT_EQ(FormatDuration(3600 + 2 * 60 + 3), "1h02m03s");
  EXPECT_EQ(FormatDuration(-1), "?");
  EXPECT_EQ(FormatDuration(1.0 / 0.0), "?");
}

}  // namespace progress_test
}  // namespace shardflow
