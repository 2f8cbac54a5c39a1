#include "core/check_mpi.hpp"

#include <mpi.h>

#include <string>

#include "core/error.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::internal {

static_assert(MPI_SUCCESS == 0, "SF_CHECK_MPI compares against 0");

void ThrowMpiError(int rc, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) {
    std::snprintf(text, sizeof(text), "MPI error code %d", rc);
  }
  ErrorContext ctx;
  if (WorldRank() >= 0) ctx.rank = WorldRank();
  throw Error(ErrorCode::kCommunication,
              std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " + text,
              std::move(ctx));
}

}  // namespace shardflow::internal
