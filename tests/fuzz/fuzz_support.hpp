// Helpers shared by the libFuzzer targets whose parser reads a file by path (IDX, JSON lines,
// checkpoints): the input bytes are written to one scratch file per process and target, under
// /dev/shm when it exists (no disk I/O per execution), else TMPDIR or /tmp. The file is removed
// when the process exits. Not thread-safe: libFuzzer runs one input at a time per process.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace shardflow::fuzz {

class ScratchFile {
 public:
  // `suffix` ends the file name (".idx", ".jsonl.gz", ".h5"): some readers pick a format by it.
  explicit ScratchFile(const std::string& suffix) {
    const char* tmp = std::getenv("TMPDIR");
    std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (tmp != nullptr ? tmp : "/tmp");
    path_ = dir + "/shardflow-fuzz-" + std::to_string(getpid()) + suffix;
  }
  ~ScratchFile() { std::remove(path_.c_str()); }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  // Replaces the file's content with `bytes`; aborts when it cannot (a broken harness, not a
  // finding in the parser).
  const std::string& Write(std::string_view bytes) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr) std::abort();
    const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    if (std::fclose(f) != 0 || !ok) std::abort();
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace shardflow::fuzz
