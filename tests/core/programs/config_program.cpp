// A program run under mpiexec by the config front-end tests: registers a few keys, parses the
// command line with ParseCommandLine inside RunMain, and in the run phase prints one line per
// rank with the values it got (so a test can see every rank resolved the same config).
//   config_program [--config FILE] [--train.batch_size=N ...] [--output DIR] [--help]
#include <unistd.h>

#include <string>

#include "core/cli.hpp"
#include "core/config.hpp"
#include "core/mpi_env.hpp"

namespace {

struct Options {
  int batch_size = 32;
  double lr = 0.1;
  std::string optimizer = "sgd";
};

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  std::string output;
  shardflow::ConfigSchema schema;
  return shardflow::RunMain(
      argc, argv,
      [&](shardflow::MpiEnvironment&) {
        schema.DescribeSection("train", "the training loop");
        schema.Add("train", "batch_size", &opts.batch_size, "samples per step per rank").Positive();
        schema.Add("train", "lr", &opts.lr, "learning rate").Positive();
        schema.AddChoice("train", "optimizer", &opts.optimizer, {"sgd", "adam"}, "update rule");
        shardflow::AppSpec app("config_program", "exercises the config front end");
        app.Flag("output", &output, "DIR", "where resolved.ini is written");
        shardflow::ParseCommandLine(argc, argv, schema, app);
      },
      [&](shardflow::MpiEnvironment& env) {
        if (env.is_chief() && !output.empty()) schema.SaveResolved(output + "/resolved.ini");
        const std::string line = "rank " + std::to_string(env.rank()) +
                                 " batch_size=" + std::to_string(opts.batch_size) +
                                 " optimizer=" + opts.optimizer + "\n";
        [[maybe_unused]] ssize_t n = ::write(STDOUT_FILENO, line.data(), line.size());
        return 0;
      });
}
