#include "io/pipeline/list_files.hpp"

#include <glob.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "core/error.hpp"
#include "io/pipeline/counter_rng.hpp"

namespace shardflow::pipeline {
namespace {

void SeededShuffle(std::vector<std::string>* names, uint64_t seed) {
  // Fisher-Yates with draws keyed by (seed, position): identical on every rank.
  CounterRng rng(seed, 0, 0, /*stream=*/0x4c495354);
  for (size_t i = names->size(); i > 1; --i) {
    std::swap((*names)[i - 1], (*names)[rng.UniformInt(i)]);
  }
}

// The first folder glob() could not read, and why (glob's error callback has no user pointer).
thread_local std::string t_glob_error_path;
thread_local int t_glob_errno = 0;

int RecordGlobError(const char* path, int error) {
  if (t_glob_errno == 0) {
    t_glob_error_path = path;
    t_glob_errno = error;
  }
  return 1;  // stop: with GLOB_ERR glob returns GLOB_ABORTED
}

// "in /abs/folder" (and, for a relative pattern, that it resolved against the working
// directory), or "(no folder /abs/folder)" when the folder is missing.
std::string WhereLooked(const std::string& pattern) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path given(pattern);
  const fs::path folder = fs::absolute(given, ec).parent_path().lexically_normal();
  std::string where = fs::is_directory(folder, ec) ? "in " + folder.string()
                                                   : "(no folder " + folder.string() + ")";
  if (given.is_relative()) where += ", relative to the working directory";
  return where;
}

std::vector<std::string> Expand(const std::string& pattern) {
  glob_t g{};
  t_glob_errno = 0;
  int rc = glob(pattern.c_str(), GLOB_ERR, RecordGlobError, &g);
  // A folder of the pattern that does not exist means nothing matches (not an I/O error).
  if (rc == GLOB_ABORTED && (t_glob_errno == ENOENT || t_glob_errno == ENOTDIR)) {
    rc = GLOB_NOMATCH;
  }
  std::vector<std::string> out;
  if (rc == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  }
  globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && out.empty())) {
    throw Error(ErrorCode::kNotFound, "no files match '" + pattern + "' " + WhereLooked(pattern),
                {.file = pattern, .hint = "check the file pattern"});
  }
  if (rc != 0) {
    throw Error(ErrorCode::kIo,
                "cannot expand file pattern '" + pattern + "': " +
                    (t_glob_errno != 0 ? t_glob_error_path + ": " + std::strerror(t_glob_errno)
                                       : std::string("glob failed")),
                {.file = pattern, .hint = "a folder in the pattern is unreadable"});
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::vector<std::string> ListFiles(const std::string& pattern, bool shuffle, uint64_t seed) {
  return ListFiles(std::vector<std::string>{pattern}, shuffle, seed);
}

void CheckFilesMatch(const std::vector<std::string>& patterns, const std::string& given_as) {
  try {
    ListFiles(patterns);
  } catch (const Error& e) {
    Status status = e.status();
    status.mutable_context().key = given_as;
    status.mutable_context().hint = "check " + given_as;
    throw Error(std::move(status));
  }
}

std::vector<std::string> ListFiles(const std::vector<std::string>& patterns, bool shuffle,
                                   uint64_t seed) {
  if (patterns.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "no file patterns given",
                {.key = "files", .hint = "set [data] files"});
  }
  std::set<std::string> all;
  for (const auto& p : patterns) {
    for (auto& name : Expand(p)) all.insert(std::move(name));
  }
  std::vector<std::string> out(all.begin(), all.end());
  if (shuffle) SeededShuffle(&out, seed);
  return out;
}

}  // namespace shardflow::pipeline
