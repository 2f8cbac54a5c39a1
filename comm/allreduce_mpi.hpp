// Pass-through to the MPI library's MPI_Allreduce (MPI_IN_PLACE, MPI_FLOAT, MPI_SUM): the
// baseline every other algorithm is measured against, and kAuto's choice where the library's
// tuned collectives win. Counts above the communicator's max_message_count are reduced in
// int-sized pieces, one MPI_Allreduce each.
#pragma once

#include <cstddef>

#include "comm/allreduce_options.hpp"
#include "comm/communicator.hpp"

namespace shardflow::comm {

// Sum in place. Always float32 (options.wire is ignored).
void AllreduceMpi(Communicator& comm, float* data, size_t count, const AllreduceOptions& options);

}  // namespace shardflow::comm
