#include "core/check_hdf5.hpp"

#include <cstdlib>
#include <cstring>
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

struct Walk {
  std::vector<std::string> lines;  // the innermost few entries, outermost first
  std::string all;                 // every entry's description and minor message
};

herr_t CollectEntry(unsigned n, const H5E_error2_t* entry, void* data) {
  auto* walk = static_cast<Walk*>(data);
  std::string line = entry->func_name ? entry->func_name : "?";
  line += "(): ";
  line += entry->desc ? entry->desc : "";
  char minor[128] = {};
  if (H5Eget_msg(entry->min_num, nullptr, minor, sizeof(minor)) > 0) {
    line += std::string(" (") + minor + ")";
  }
  walk->all += line + "\n";
  if (n < 4) walk->lines.push_back(std::move(line));  // the first few say what went wrong
  return 0;
}

Walk TakeWalk() {
  Walk walk;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, CollectEntry, &walk);
  H5Eclear2(H5E_DEFAULT);
  return walk;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) {
    if (!text.empty()) text += "; ";
    text += line;
  }
  return text.empty() ? "no HDF5 error stack" : text;
}

bool Has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// What the program was doing, from the HDF5 function named first in `call`.
std::string Action(const std::string& call) {
  const std::string name = call.substr(0, call.find('('));
  if (name == "H5Fopen") return "cannot open the HDF5 file";
  if (name == "H5Fcreate") return "cannot create the HDF5 file";
  if (name == "H5Fclose" || name == "H5Fflush") return "cannot finish writing the HDF5 file";
  if (name == "H5Dread" || name == "H5Aread") return "cannot read the HDF5 data";
  if (name == "H5Dwrite" || name == "H5Awrite") return "cannot write the HDF5 data";
  return "HDF5 call " + name + " failed";
}

}  // namespace

std::string TakeHdf5ErrorStack() { return Join(TakeWalk().lines); }

Hdf5Failure ClassifyHdf5Failure(const std::string& stack) {
  // The file drivers put the operating system's errno in their entry's description.
  const size_t at = stack.find("errno = ");
  if (at != std::string::npos) {
    const int err = std::atoi(stack.c_str() + at + 8);
    if (err > 0) {
      return {ErrorCode::kIo,
              std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")"};
    }
  }
  if (Has(stack, "truncated file") || Has(stack, "File has been truncated")) {
    return {ErrorCode::kDataLoss, "the file is truncated (shorter than its header says)"};
  }
  if (Has(stack, "file signature not found") || Has(stack, "Not an HDF5 file")) {
    return {ErrorCode::kDataLoss, "it is not an HDF5 file, or its header is damaged"};
  }
  if (Has(stack, "Filter operation failed") || Has(stack, "checksum") || Has(stack, "Checksum") ||
      Has(stack, "data pipeline read failed")) {
    return {ErrorCode::kDataLoss,
            "the data is damaged (a compressed chunk or a checksum does not decode)"};
  }
  if (Has(stack, "No space left") || Has(stack, "Disk quota")) {
    return {ErrorCode::kIo, "no space left on the device"};
  }
  return {ErrorCode::kIo, "the HDF5 library refused it"};
}

namespace internal {

void ThrowHdf5Error(const char* call, const char* /*file*/, int /*line*/, ErrorContext ctx) {
  if (!ctx.rank && WorldRank() >= 0) ctx.rank = WorldRank();
  const Walk walk = TakeWalk();
  const Hdf5Failure failure = ClassifyHdf5Failure(walk.all);
  throw Error(failure.code,
              Action(call) + ": " + failure.cause + " (HDF5: " + Join(walk.lines) + ")",
              std::move(ctx));
}

}  // namespace internal
}  // namespace shardflow
