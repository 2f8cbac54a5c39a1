// Paths the tests need: the fixtures, the source and build trees, scratch folders.
// Thread-safety: the path functions are safe from any thread; a ScratchDir belongs to one test.
#pragma once

#include <filesystem>
#include <string>

namespace shardflow::testing {

// tests/fixtures in the source tree (files written by other tools; see its README.md).
std::filesystem::path FixturesDir();
std::filesystem::path SourceDir();
std::filesystem::path BinaryDir();

// A fresh empty folder for one test, removed when the object is destroyed.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& name);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& child) const { return path_ / child; }

 private:
  std::filesystem::path path_;
};

}  // namespace shardflow::testing
