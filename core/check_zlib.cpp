#include "core/check_zlib.hpp"

#include <string>

#include "core/mpi_env.hpp"

namespace shardflow::internal {

void ThrowZlibError(int rc, const z_stream* stream, const char* call, const char* file, int line) {
  std::string message = std::string(call) + " failed at " + file + ":" + std::to_string(line) +
                        ": zlib: " + zError(rc);
  if (stream != nullptr && stream->msg != nullptr) message += std::string(" (") + stream->msg + ")";
  ErrorContext ctx;
  if (WorldRank() >= 0) ctx.rank = WorldRank();
  const bool data_error = rc == Z_DATA_ERROR || rc == Z_NEED_DICT;
  throw Error(data_error ? ErrorCode::kDataLoss : ErrorCode::kInternal, message, std::move(ctx));
}

}  // namespace shardflow::internal
