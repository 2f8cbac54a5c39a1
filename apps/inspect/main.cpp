// shardflow-inspect: parse the command line, run it (apps/inspect/inspect.hpp).
#include <iostream>

#include "apps/inspect/inspect.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  using namespace shardflow;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << inspect::Usage();
    return 0;
  }
  inspect::InspectOptions options;
  try {
    options = inspect::ParseArgs(args);
  } catch (const Error& e) {
    std::cerr << "error: " << e.what() << "\n" << inspect::Usage();
    return 2;
  }
  std::ios::sync_with_stdio(false);
  return inspect::Run(options, std::cout, std::cerr);
}
