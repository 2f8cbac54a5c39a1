#include <gtest/gtest.h>
#include <mpi.h>

#include "core/mpi_env.hpp"

namespace shardflow {
namespace {

TEST(BootstrapTest, RanksAndLocalRanksAreConsistent) {
  int argc = 0;
  char** argv = nullptr;
  MpiEnvironment env(&argc, &argv);  // MPI is already initialised by the test main
  int world_size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  EXPECT_EQ(env.size(), world_size);
  EXPECT_EQ(env.rank(), WorldRank());
  EXPECT_EQ(env.thread_level(), MPI_THREAD_MULTIPLE);
  // All ranks of this test share one machine.
  EXPECT_EQ(env.local_size(), env.size());
  EXPECT_GE(env.local_rank(), 0);
  EXPECT_LT(env.local_rank(), env.local_size());
  // Local ranks are a permutation of 0..local_size-1.
  int local = env.local_rank();
  int total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(total, env.size() * (env.size() - 1) / 2);
}

}  // namespace
}  // namespace shardflow
