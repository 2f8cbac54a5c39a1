// Every rank writes lines from several threads to stderr; the test checks none interleave.
#include <string>
#include <thread>
#include <vector>

#include "core/logging.hpp"
#include "core/mpi_env.hpp"

int main(int argc, char** argv) {
  return shardflow::RunMain(
      argc, argv, [](shardflow::MpiEnvironment&) {},
      [](shardflow::MpiEnvironment& env) {
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
          threads.emplace_back([t, &env] {
            for (int i = 0; i < 300; ++i) {
              SF_LOG(Info) << "rank=" << env.rank() << " thread=" << t << " i=" << i << ' '
                           << std::string((i * 37) % 300, 'x') << " end";
            }
          });
        }
        for (auto& th : threads) th.join();
        SF_LOG0(Info) << "only rank zero says this";
        return 0;
      });
}
