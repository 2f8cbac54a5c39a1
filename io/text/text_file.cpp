#include "io/text/text_file.hpp"

#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace shardflow::text {

std::string ReadTextFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kNotFound, "cannot open the " + what, {.file = path});
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) throw Error(ErrorCode::kIo, "cannot read the " + what, {.file = path});
  return bytes.str();
}

}  // namespace shardflow::text
