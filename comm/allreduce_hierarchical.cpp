#include "comm/allreduce_hierarchical.hpp"

#include "comm/allreduce_ring.hpp"
#include "core/check_mpi.hpp"
#include "core/error.hpp"

namespace shardflow::comm {

void AllreduceHierarchical(Communicator& comm, float* data, size_t count,
                           const AllreduceOptions& options) {
  if (comm.size() == 1 || count == 0) return;
  Communicator* node = comm.node();
  if (node == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "hierarchical all-reduce needs a communicator with discover_topology",
                {.rank = comm.rank()});
  }
  const size_t limit = comm.max_message_count();
  const size_t pieces = NumMessagePieces(count, limit);
  if (node->size() > 1) {
    for (size_t i = 0; i < pieces; ++i) {
      const MessagePiece piece = MessagePieceAt(count, limit, i);
      float* p = data + piece.offset;
      SF_CHECK_MPI(MPI_Reduce(node->rank() == 0 ? MPI_IN_PLACE : p, p, piece.count, MPI_FLOAT,
                              MPI_SUM, 0, node->raw()));
    }
  }
  if (Communicator* leaders = comm.leaders(); leaders != nullptr && leaders->size() > 1) {
    AllreduceRing(*leaders, data, count, options);
  }
  if (node->size() > 1) {
    for (size_t i = 0; i < pieces; ++i) {
      const MessagePiece piece = MessagePieceAt(count, limit, i);
      SF_CHECK_MPI(MPI_Bcast(data + piece.offset, piece.count, MPI_FLOAT, 0, node->raw()));
    }
  }
}

}  // namespace shardflow::comm
