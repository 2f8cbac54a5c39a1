// A job whose last rank misbehaves at the second collective, for the watchdog tests:
//   hang_program MODE TIMEOUT_SECONDS
//   MODE = ok     every rank joins both all-reduces; exits 0
//          kill   the last rank raises SIGKILL instead of joining
//          exit   the last rank calls _exit(0) instead of joining
//          sleep  the last rank sleeps 60 s before joining
// The others must end non-zero within about TIMEOUT_SECONDS, naming the hung operation.
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "comm/allreduce.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"

using namespace shardflow;

int main(int argc, char** argv) {
  std::string mode;
  double timeout = 0;
  return RunMain(
      argc, argv,
      [&](MpiEnvironment&) {
        if (argc != 3) throw Error(ErrorCode::kInvalidArgument, "usage: hang_program MODE SECONDS");
        mode = argv[1];
        timeout = std::stod(argv[2]);
      },
      [&](MpiEnvironment& env) {
        comm::Communicator comm(MPI_COMM_WORLD,
                                {.watchdog = comm::WatchdogOptions{.timeout_seconds = timeout}});
        std::vector<float> v(100000, 1.0f);
        comm::Allreduce(comm, v.data(), v.size(), {.algorithm = comm::AllreduceAlgorithm::kRing});
        const bool last = env.rank() == env.size() - 1;
        if (last && mode == "kill") raise(SIGKILL);
        if (last && mode == "exit") _exit(0);
        if (last && mode == "sleep") sleep(60);
        comm::Allreduce(comm, v.data(), v.size(), {.algorithm = comm::AllreduceAlgorithm::kRing});
        return v[0] == static_cast<float>(env.size() * env.size()) ? 0 : 1;
      });
}
