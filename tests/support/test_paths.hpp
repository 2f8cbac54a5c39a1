// Paths the tests need: the shared fixtures, the source and build trees, scratch folders.
#pragma once

#include <filesystem>
#include <string>

namespace shardflow::testing {

// ../shared/fixtures beside the checkout.
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
