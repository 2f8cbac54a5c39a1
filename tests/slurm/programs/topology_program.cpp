// Prints where each rank runs and checks all-reduces across nodes; run by tests/slurm under
// mpirun on two network-namespace "nodes" (netns_cluster.sh).
//
//   topology_program
//
// Every rank prints one line (rank order, gathered on rank 0):
//   rank R host H local_rank L local_size S num_nodes N
// then, for each algorithm (hierarchical, ring, rd, mpi) and count (0, 1, 7, 1000, 262147),
// every rank contributes x_r[i] = (r + 1) * ((i % 13) + 1) and checks the sum
// size (size + 1) / 2 * ((i % 13) + 1) element by element (exact in float32 for these sizes);
// rank 0 prints "allreduce ALGO count=C ok" per case. A wrong element throws Error(kInternal)
// naming algorithm, count, index, value and expected value, which ends the job (exit != 0).
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "comm/allreduce.hpp"
#include "comm/communicator.hpp"
#include "core/check_mpi.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"

namespace {

using shardflow::Error;
using shardflow::ErrorCode;
using shardflow::comm::AllreduceAlgorithm;

std::string DescribeRank(const shardflow::comm::Communicator& comm) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return "rank " + std::to_string(comm.rank()) + " host " + host + " local_rank " +
         std::to_string(comm.local_rank()) + " local_size " + std::to_string(comm.local_size()) +
         " num_nodes " + std::to_string(comm.num_nodes());
}

// Rank 0 prints every rank's line in rank order.
void PrintTopology(const shardflow::comm::Communicator& comm) {
  std::string mine = DescribeRank(comm);
  mine.resize(256, '\0');
  std::vector<char> all(comm.rank() == 0 ? 256 * static_cast<size_t>(comm.size()) : 0);
  SF_CHECK_MPI(MPI_Gather(mine.data(), 256, MPI_CHAR, all.data(), 256, MPI_CHAR, 0, comm.raw()));
  if (comm.rank() != 0) return;
  for (int r = 0; r < comm.size(); ++r) std::printf("%s\n", all.data() + 256 * r);
  std::fflush(stdout);
}

void CheckAllreduce(shardflow::comm::Communicator& comm, AllreduceAlgorithm algorithm,
                    size_t count) {
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i) {
    data[i] = static_cast<float>((comm.rank() + 1) * static_cast<int>((i % 13) + 1));
  }
  shardflow::comm::Allreduce(comm, data.data(), count, {.algorithm = algorithm});
  const double ranks_sum = comm.size() * (comm.size() + 1) / 2.0;
  for (size_t i = 0; i < count; ++i) {
    const double expected = ranks_sum * static_cast<double>((i % 13) + 1);
    if (static_cast<double>(data[i]) != expected) {
      throw Error(ErrorCode::kInternal,
                  std::string("allreduce ") + shardflow::comm::AlgorithmName(algorithm) +
                      " count=" + std::to_string(count) + " index " + std::to_string(i) + ": got " +
                      std::to_string(data[i]) + ", expected " + std::to_string(expected));
    }
  }
  if (comm.rank() == 0) {
    std::printf("allreduce %s count=%zu ok\n", shardflow::comm::AlgorithmName(algorithm), count);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  return shardflow::RunMain(
      argc, argv,
      [&](shardflow::MpiEnvironment&) {
        if (argc > 1) {
          throw Error(ErrorCode::kInvalidArgument,
                      std::string("topology_program takes no arguments, got '") + argv[1] + "'");
        }
      },
      [&](shardflow::MpiEnvironment&) {
        shardflow::comm::Communicator comm(MPI_COMM_WORLD);
        PrintTopology(comm);
        for (AllreduceAlgorithm algorithm :
             {AllreduceAlgorithm::kHierarchical, AllreduceAlgorithm::kRing,
              AllreduceAlgorithm::kRecursiveDoubling, AllreduceAlgorithm::kMpi}) {
          for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{262147}}) {
            CheckAllreduce(comm, algorithm, count);
          }
        }
        return 0;
      });
}
