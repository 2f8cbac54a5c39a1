#include "comm/collectives.hpp"

#include <string>

#include "core/check_mpi.hpp"
#include "core/error.hpp"

namespace shardflow::comm {

void Broadcast(Communicator& comm, float* data, size_t count, int root) {
  if (root < 0 || root >= comm.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "broadcast root " + std::to_string(root) + " is not a rank of a communicator of " +
                    std::to_string(comm.size()),
                {.rank = comm.rank()});
  }
  CollectiveScope scope(comm.watchdog(), "broadcast(float)", count * sizeof(float));
  const size_t limit = comm.max_message_count();
  for (size_t i = 0; i < NumMessagePieces(count, limit); ++i) {
    const MessagePiece piece = MessagePieceAt(count, limit, i);
    SF_CHECK_MPI(MPI_Bcast(data + piece.offset, piece.count, MPI_FLOAT, root, comm.raw()));
  }
}

void AllreduceInt64(Communicator& comm, int64_t* values, size_t count, Int64Op op) {
  const char* name = op == Int64Op::kSum   ? "allreduce(int64 sum)"
                     : op == Int64Op::kMin ? "allreduce(int64 min)"
                                           : "allreduce(int64 max)";
  const MPI_Op mpi_op = op == Int64Op::kSum ? MPI_SUM : op == Int64Op::kMin ? MPI_MIN : MPI_MAX;
  CollectiveScope scope(comm.watchdog(), name, count * sizeof(int64_t));
  const size_t limit = comm.max_message_count();
  for (size_t i = 0; i < NumMessagePieces(count, limit); ++i) {
    const MessagePiece piece = MessagePieceAt(count, limit, i);
    SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values + piece.offset, piece.count, MPI_INT64_T,
                               mpi_op, comm.raw()));
  }
}

int64_t AllreduceInt64(Communicator& comm, int64_t value, Int64Op op) {
  AllreduceInt64(comm, &value, 1, op);
  return value;
}

void AllreduceDoubles(Communicator& comm, double* values, size_t count, ReduceOp op) {
  const MPI_Op mpi_op = op == ReduceOp::kSum ? MPI_SUM : op == ReduceOp::kMin ? MPI_MIN : MPI_MAX;
  CollectiveScope scope(comm.watchdog(), "allreduce(double)", count * sizeof(double));
  const size_t limit = comm.max_message_count();
  for (size_t i = 0; i < NumMessagePieces(count, limit); ++i) {
    const MessagePiece piece = MessagePieceAt(count, limit, i);
    SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values + piece.offset, piece.count, MPI_DOUBLE, mpi_op,
                               comm.raw()));
  }
}

double AllreduceDouble(Communicator& comm, double value, ReduceOp op) {
  AllreduceDoubles(comm, &value, 1, op);
  return value;
}

}  // namespace shardflow::comm
