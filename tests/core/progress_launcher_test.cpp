// The progress bar is drawn only on a real terminal (issue 24, item 2): a rank started by mpirun
// sees a pseudo-terminal made by the launcher even when the job's output goes to a log file, so
// there it prints plain lines, with no carriage returns or escape codes, unless
// SHARDFLOW_PROGRESS=bar asks for the bar.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <termios.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/progress.hpp"

namespace shardflow {
namespace progress_launcher_test {

// A pseudo-terminal in raw mode (no \n -> \r\n translation): the slave is the reporter's fd.
class Pty {
 public:
  Pty() {
    master_ = ::posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0 || ::grantpt(master_) != 0 || ::unlockpt(master_) != 0) return;
    slave_ = ::open(::ptsname(master_), O_RDWR | O_NOCTTY);
    termios raw{};
    if (slave_ >= 0 && ::tcgetattr(slave_, &raw) == 0) {
      ::cfmakeraw(&raw);
      ::tcsetattr(slave_, TCSANOW, &raw);
    }
    ::fcntl(master_, F_SETFL, O_NONBLOCK);
  }
  ~Pty() {
    if (slave_ >= 0) ::close(slave_);
    if (master_ >= 0) ::close(master_);
  }
  bool ok() const { return slave_ >= 0; }
  int slave() const { return slave_; }
  std::string Drain() {
    std::string out;
    char buffer[4096];
    for (ssize_t n; (n = ::read(master_, buffer, sizeof(buffer))) > 0;) out.append(buffer, n);
    return out;
  }

 private:
  int master_ = -1;
  int slave_ = -1;
};

// Runs 10 steps of 1 s each through a kAuto reporter writing to a pty; returns what it wrote.
std::string RunOnPty() {
  Pty pty;
  if (!pty.ok()) return "no pty";
  double now = 0;
  {
    ProgressReporter progress(10, {.label = "train",
                                   .print_interval_seconds = 30,
                                   .redraw_interval_seconds = 0.2,
                                   .fd = pty.slave(),
                                   .clock = [&] { return now; },
                                   .rank = 0});
    for (int i = 0; i < 10; ++i) {
      now += 1;
      progress.Advance(1, 0);
    }
    progress.Finish();
  }
  return pty.Drain();
}

class ProgressLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"PMIX_RANK", "PMI_SIZE", "SLURM_STEP_ID", "SHARDFLOW_PROGRESS"}) {
      ::unsetenv(name);
    }
  }
  void TearDown() override { SetUp(); }
};

TEST_F(ProgressLauncherTest, APtyAloneDrawsTheBar) {
  const std::string out = RunOnPty();
  EXPECT_NE(out.find('\r'), std::string::npos) << out;
}

TEST_F(ProgressLauncherTest, UnderMpirunThePtyGetsPlainLines) {
  ::setenv("PMIX_RANK", "0", 1);
  const std::string out = RunOnPty();
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find('\033'), std::string::npos) << out;
  EXPECT_NE(out.find("train: done 10/10 steps"), std::string::npos) << out;
}

TEST_F(ProgressLauncherTest, ShardflowProgressBarForcesTheBar) {
  ::setenv("PMIX_RANK", "0", 1);
  ::setenv("SHARDFLOW_PROGRESS", "bar", 1);
  EXPECT_NE(RunOnPty().find('\r'), std::string::npos);
}

}  // namespace progress_launcher_test
}  // namespace shardflow
