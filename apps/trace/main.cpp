// shardflow-trace: parse the command line, run it (apps/trace/merge.hpp).
#include <iostream>

#include "apps/trace/merge.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  using namespace shardflow;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << trace_tool::Usage();
    return 0;
  }
  trace_tool::MergeOptions options;
  try {
    options = trace_tool::ParseArgs(args);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n" << trace_tool::Usage();
    return 2;
  }
  try {
    return trace_tool::RunMerge(options, std::cout);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return ExitCodeFor(e.code());  // 2 not found or usage, 3 data loss, as every program
  }
}
