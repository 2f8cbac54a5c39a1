#include "apps/train/test_fault.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::train {

TestFault TestFault::FromEnvironment() {
  const char* env = std::getenv("SHARDFLOW_TEST_FAULT");
  if (env == nullptr || *env == '\0') return {};
  char kind[16] = {};
  int rank = -1;
  long long step = -1;
  char extra = 0;
  const int n = std::sscanf(env, "%15[a-z_]:%d:%lld%c", kind, &rank, &step, &extra);
  const std::string k = kind;
  if (n != 3 || (k != "kill" && k != "hang" && k != "slow" && k != "slow_checkpoint") || rank < 0 ||
      step < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("bad SHARDFLOW_TEST_FAULT '") + env +
                    "': expected kill:RANK:STEP, hang:RANK:STEP, slow:RANK:MILLISECONDS or "
                    "slow_checkpoint:RANK:MILLISECONDS");
  }
  TestFault f;
  f.rank_ = rank;
  if (k == "slow_checkpoint") {
    f.slow_checkpoint_ms_ = step;
    return f;
  }
  if (k == "slow") {
    f.slow_ms_ = step;
    return f;
  }
  f.step_ = step;
  f.signal_ = k == "kill" ? SIGKILL : SIGSTOP;
  return f;
}

void TestFault::MaybeRaise(int rank, int64_t step) const {
  if (rank == rank_ && slow_ms_ > 0) {  // a straggler: every step this much longer
    std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms_));
    return;
  }
  if (rank != rank_ || step != step_) return;
  SF_LOG(Warn) << "SHARDFLOW_TEST_FAULT: rank " << rank << " raises "
               << (signal_ == SIGKILL ? "SIGKILL" : "SIGSTOP") << " at step " << step;
  std::raise(signal_);
}

void TestFault::MaybeSlowCheckpoint(int rank) const {
  if (rank != rank_ || slow_checkpoint_ms_ <= 0) return;
  SF_LOG(Warn) << "SHARDFLOW_TEST_FAULT: rank " << rank << " sleeps " << slow_checkpoint_ms_
               << " ms before writing a checkpoint";
  std::this_thread::sleep_for(std::chrono::milliseconds(slow_checkpoint_ms_));
}

}  // namespace shardflow::train
