// shardflow-bench gpu: starts shardflow-bench-gpu (apps/bench/gpu), the GPU training benchmark,
// from the same directory with the same arguments and returns its exit status. The benchmark is
// its own program so that CUDA's libraries never load into the CPU benchmarks (apps/bench/gpu/
// main.cpp says why); this subcommand only makes it reachable under the usual name.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "apps/bench/bench_registry.hpp"
#include "core/error.hpp"

extern char** environ;

namespace shardflow::bench {
namespace {

int RunGpu(const std::vector<std::string>& args) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string program = (self.parent_path() / "shardflow-bench-gpu").string();
  if (ec || !std::filesystem::exists(program)) {
    throw Error(ErrorCode::kNotFound, "the GPU benchmark program " + program + " is missing",
                {.hint = "build the target shardflow-bench-gpu"});
  }
  std::vector<std::string> argv_store = {program};
  argv_store.insert(argv_store.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, program.c_str(), nullptr, nullptr, argv.data(), environ);
  if (rc != 0) {
    throw Error(ErrorCode::kInternal, "cannot start " + program + ": " + std::strerror(rc));
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      throw Error(ErrorCode::kInternal, "waitpid: " + std::string(std::strerror(errno)));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

SHARDFLOW_BENCH("gpu", "training samples/s of mlp/cnn/resnet on a CUDA device (own program)",
                RunGpu);

}  // namespace shardflow::bench
