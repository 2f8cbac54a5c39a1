#include "comm/allreduce_mpi.hpp"

#include "core/check_mpi.hpp"

namespace shardflow::comm {

void AllreduceMpi(Communicator& comm, float* data, size_t count, const AllreduceOptions&) {
  if (comm.size() == 1) return;
  const size_t limit = comm.max_message_count();
  for (size_t i = 0; i < NumMessagePieces(count, limit); ++i) {
    const MessagePiece piece = MessagePieceAt(count, limit, i);
    SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, data + piece.offset, piece.count, MPI_FLOAT, MPI_SUM,
                               comm.raw()));
  }
}

}  // namespace shardflow::comm
