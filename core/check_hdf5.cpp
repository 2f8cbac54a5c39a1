#include "core/check_hdf5.hpp"

#include <mutex>
#include <string>
#include <vector>

#include "core/mpi_env.hpp"

namespace shardflow {

void SilenceHdf5Errors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

namespace {

herr_t CollectEntry(unsigned n, const H5E_error2_t* entry, void* data) {
  auto* lines = static_cast<std::vector<std::string>*>(data);
  if (n >= 4) return 0;  // the innermost few entries say what went wrong
  std::string line = entry->func_name ? entry->func_name : "?";
  line += "(): ";
  line += entry->desc ? entry->desc : "";
  char minor[128] = {};
  if (H5Eget_msg(entry->min_num, nullptr, minor, sizeof(minor)) > 0) {
    line += std::string(" (") + minor + ")";
  }
  lines->push_back(std::move(line));
  return 0;
}

}  // namespace

std::string TakeHdf5ErrorStack() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, CollectEntry, &lines);
  H5Eclear2(H5E_DEFAULT);
  std::string text;
  for (const auto& line : lines) {
    if (!text.empty()) text += "; ";
    text += line;
  }
  return text.empty() ? "no HDF5 error stack" : text;
}

namespace internal {

void ThrowHdf5Error(const char* call, const char* file, int line, ErrorContext ctx) {
  if (!ctx.rank && WorldRank() >= 0) ctx.rank = WorldRank();
  throw Error(ErrorCode::kIo,
              std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                  ": HDF5: " + TakeHdf5ErrorStack(),
              std::move(ctx));
}

}  // namespace internal
}  // namespace shardflow
