// Helpers for MPI tests: this process's rank and size in MPI_COMM_WORLD, and a scratch folder
// made by rank 0 and shared by every rank (all ranks of a test run on one machine).
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "tests/support/test_paths.hpp"

namespace shardflow::testing {

inline int MpiRank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int MpiSize() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// Collective: rank 0 creates the folder and broadcasts its path. The destructor waits for
// every rank (a barrier) before rank 0 removes the folder.
class SharedScratch {
 public:
  explicit SharedScratch(const std::string& name) {
    std::string path;
    if (MpiRank() == 0) {
      dir_ = std::make_unique<ScratchDir>(name);
      path = dir_->path().string();
    }
    int len = static_cast<int>(path.size());
    MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path.resize(static_cast<size_t>(len));
    MPI_Bcast(path.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = path;
  }
  ~SharedScratch() { MPI_Barrier(MPI_COMM_WORLD); }
  SharedScratch(const SharedScratch&) = delete;
  SharedScratch& operator=(const SharedScratch&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& child) const { return path_ + "/" + child; }

 private:
  std::unique_ptr<ScratchDir> dir_;
  std::string path_;
};

}  // namespace shardflow::testing
