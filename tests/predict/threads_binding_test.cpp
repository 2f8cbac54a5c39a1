// The warning shardflow-predict and shardflow-train print when train.threads exceed the cores
// the launcher bound the process to (mpirun binds each of 2 or fewer ranks to one core; two
// threads then time-slice on it: 1 rank x 2 threads trained at half the speed of 2 x 1).
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "apps/common/experiment_config.hpp"
#include "core/cpu/gemm.hpp"

namespace shardflow::apps {
namespace threads_binding_test {

TEST(ThreadsBinding, MoreThreadsThanBoundCoresWarnWithTheFlags) {
  const std::string w = ThreadsOverBindingWarning(2, 1, "train.threads");
  EXPECT_NE(w.find("train.threads = 2 but this process is bound to 1 core, so its threads share "
                   "it"),
            std::string::npos)
      << w;
  EXPECT_NE(w.find("--map-by slot:PE=2 or --bind-to none, or srun --cpus-per-task=2"),
            std::string::npos)
      << w;
  EXPECT_NE(ThreadsOverBindingWarning(8, 4, "k").find("bound to 4 cores, so its threads share "
                                                      "them"),
            std::string::npos);
}

TEST(ThreadsBinding, ThreadsThatFitOrAnUnknownBindingSayNothing) {
  EXPECT_EQ(ThreadsOverBindingWarning(1, 1, "train.threads"), "");
  EXPECT_EQ(ThreadsOverBindingWarning(2, 2, "train.threads"), "");
  EXPECT_EQ(ThreadsOverBindingWarning(4, 0, "train.threads"), "");
}

TEST(ThreadsBinding, BoundCoresReadsThisProcessesAffinity) {
  const int bound = cpu::BoundCores();
  EXPECT_GE(bound, 1);
  EXPECT_LE(bound, static_cast<int>(std::thread::hardware_concurrency()));
}

}  // namespace threads_binding_test
}  // namespace shardflow::apps
