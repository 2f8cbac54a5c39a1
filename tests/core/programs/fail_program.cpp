// A program run under mpiexec by the failure-policy tests:
//   fail_program parse        every rank fails while parsing (as for a bad flag)
//   fail_program run R        rank R throws during the run phase; the others wait in a barrier
//   fail_program ok           nothing fails
#include <mpi.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "core/mpi_env.hpp"

int main(int argc, char** argv) {
  std::string mode;
  int failing_rank = -1;
  return shardflow::RunMain(
      argc, argv,
      [&](shardflow::MpiEnvironment&) {
        mode = argc > 1 ? argv[1] : "";
        if (mode == "parse") {
          throw shardflow::Error(shardflow::ErrorCode::kInvalidArgument, "unknown flag --bogus");
        }
        if (mode == "run") failing_rank = argc > 2 ? std::atoi(argv[2]) : 0;
      },
      [&](shardflow::MpiEnvironment& env) {
        if (env.rank() == failing_rank) {
          throw shardflow::Error(shardflow::ErrorCode::kDataLoss, "corrupt record",
                                 {.file = "x.tfrecord", .offset = 10, .record = 1});
        }
        MPI_Barrier(MPI_COMM_WORLD);  // the survivors would wait here forever
        return 0;
      });
}
