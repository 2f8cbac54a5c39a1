#include "apps/train/test_fault.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/environment.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::train {
namespace {

const char* SignalName(int signal) {
  switch (signal) {
    case SIGKILL:
      return "SIGKILL";
    case SIGSTOP:
      return "SIGSTOP";
    case SIGTERM:
      return "SIGTERM";
    default:
      return "SIGUSR1";
  }
}

}  // namespace

TestFault TestFault::FromEnvironment() {
  const std::optional<std::string> text = env::Text("SHARDFLOW_TEST_FAULT");
  if (!text) return {};
  const char* env = text->c_str();
  char kind[16] = {}, who[8] = {};
  long long step = -1;
  char extra = 0;
  const int n = std::sscanf(env, "%15[a-z1_]:%7[a-z0-9]:%lld%c", kind, who, &step, &extra);
  const std::string k = kind, w = who;
  const bool known = k == "kill" || k == "hang" || k == "slow" || k == "term" || k == "usr1" ||
                     k == "slow_checkpoint" || k == "slow_input" || k == "stall" ||
                     k == "kill_allreduce";
  const bool every = w == "all" && (k == "term" || k == "usr1");
  const int rank = every ? kEveryRank
                   : !w.empty() && w.find_first_not_of("0123456789") == std::string::npos
                       ? std::atoi(who)
                       : -1;
  if (n != 3 || !known || rank == -1 || step < 0) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string("bad SHARDFLOW_TEST_FAULT '") + env +
                    "': expected kill:RANK:STEP, hang:RANK:STEP, slow:RANK:MILLISECONDS, "
                    "slow_checkpoint:RANK:MILLISECONDS, slow_input:RANK:MILLISECONDS, "
                    "stall:RANK:STEP, kill_allreduce:RANK:STEP, term:RANK|all:STEP or "
                    "usr1:RANK|all:STEP");
  }
  TestFault f;
  f.rank_ = rank;
  if (k == "slow_checkpoint") {
    f.slow_checkpoint_ms_ = step;
    return f;
  }
  if (k == "stall") {
    f.stall_ = true;
    f.step_ = step;
    return f;
  }
  if (k == "slow_input") {
    f.slow_input_ms_ = step;
    return f;
  }
  if (k == "slow") {
    f.slow_ms_ = step;
    return f;
  }
  f.step_ = step;
  f.in_allreduce_ = k == "kill_allreduce";
  f.signal_ = k == "kill" || f.in_allreduce_ ? SIGKILL
              : k == "hang"                  ? SIGSTOP
              : k == "term"                  ? SIGTERM
                                             : SIGUSR1;
  return f;
}

void TestFault::MaybeRaise(int rank, int64_t step) const {
  if (rank == rank_ && slow_ms_ > 0) {  // a straggler: every step this much longer
    std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms_));
    return;
  }
  if ((rank != rank_ && rank_ != kEveryRank) || step != step_ || in_allreduce_) return;
  SF_LOG(Warn) << "SHARDFLOW_TEST_FAULT: rank " << rank << " raises " << SignalName(signal_)
               << " at step " << step;
  std::raise(signal_);
  if (signal_ == SIGTERM) std::raise(signal_);  // a second one, as an impatient scheduler sends
}

void TestFault::MaybeKillInAllreduce(int rank, int64_t step) const {
  if (!in_allreduce_ || rank != rank_ || step != step_) return;
  SF_LOG(Warn) << "SHARDFLOW_TEST_FAULT: rank " << rank
               << " raises SIGKILL inside the gradient all-reduce of step " << step;
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::raise(SIGKILL);
}

void TestFault::MaybeSlowCheckpoint(int rank) const {
  if (rank != rank_ || slow_checkpoint_ms_ <= 0) return;
  SF_LOG(Warn) << "SHARDFLOW_TEST_FAULT: rank " << rank << " sleeps " << slow_checkpoint_ms_
               << " ms before writing a checkpoint";
  std::this_thread::sleep_for(std::chrono::milliseconds(slow_checkpoint_ms_));
}

void TestFault::MaybeSlowInput(int rank, int64_t step) const {
  if (rank == rank_ && slow_input_ms_ > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(slow_input_ms_));
  }
  if (rank == rank_ && stall_ && step == step_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
}

}  // namespace shardflow::train
