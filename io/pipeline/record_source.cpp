#include "io/pipeline/record_source.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace shardflow::pipeline {

FileInfo StatFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    throw Error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo,
                std::string("cannot stat input file: ") + std::strerror(err), {.file = path});
  }
  FileInfo info;
  info.name = path;
  info.size_bytes = static_cast<uint64_t>(st.st_size);
  info.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return info;
}

}  // namespace shardflow::pipeline
