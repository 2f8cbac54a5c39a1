#include "tests/support/test_paths.hpp"

#include <unistd.h>

#include <random>

namespace shardflow::testing {

std::filesystem::path FixturesDir() { return SHARDFLOW_FIXTURES_DIR; }
std::filesystem::path SourceDir() { return SHARDFLOW_SOURCE_DIR; }
std::filesystem::path BinaryDir() { return SHARDFLOW_BINARY_DIR; }

ScratchDir::ScratchDir(const std::string& name) {
  std::random_device rd;
  path_ = std::filesystem::temp_directory_path() /
          ("shardflow-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(rd()));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace shardflow::testing
