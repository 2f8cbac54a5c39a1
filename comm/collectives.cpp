#include "comm/collectives.hpp"

#include <chrono>
#include <string>
#include <thread>

#include "core/check_mpi.hpp"
#include "core/error.hpp"
#include "core/timer.hpp"
#include "core/trace.hpp"

namespace shardflow::comm {
namespace {

// Tag of GatherInto's messages; collectives complete before the next starts, so one tag
// cannot match another call's messages.
constexpr int kGatherTag = 41;

void CheckRoot(const Communicator& comm, int root, const char* op) {
  if (root < 0 || root >= comm.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(op) + " root " + std::to_string(root) +
                    " is not a rank of a communicator of " + std::to_string(comm.size()),
                {.rank = comm.rank()});
  }
}

MPI_Op ToMpi(ReduceOp op) {
  return op == ReduceOp::kSum ? MPI_SUM : op == ReduceOp::kMin ? MPI_MIN : MPI_MAX;
}

// Calls send(pointer, int count) for each int-sized piece of count elements of elem_bytes.
template <typename Send>
void ForEachPiece(const Communicator& comm, void* data, size_t count, size_t elem_bytes,
                  Send send) {
  auto* bytes = static_cast<char*>(data);
  const size_t limit = comm.max_message_count();
  for (size_t i = 0; i < NumMessagePieces(count, limit); ++i) {
    const MessagePiece piece = MessagePieceAt(count, limit, i);
    send(bytes + piece.offset * elem_bytes, piece.count);
  }
}

// Broadcasts count elements of `type` in int-sized pieces. The caller holds the scopes.
void BroadcastPieces(Communicator& comm, void* data, size_t count, MPI_Datatype type,
                     size_t elem_bytes, int root) {
  ForEachPiece(comm, data, count, elem_bytes,
               [&](char* at, int n) { SF_CHECK_MPI(MPI_Bcast(at, n, type, root, comm.raw())); });
}

// In-place all-reduce of count elements of `type` in int-sized pieces.
void AllreducePieces(Communicator& comm, void* data, size_t count, MPI_Datatype type,
                     size_t elem_bytes, ReduceOp op) {
  ForEachPiece(comm, data, count, elem_bytes, [&](char* at, int n) {
    SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, at, n, type, ToMpi(op), comm.raw()));
  });
}

}  // namespace

void Broadcast(Communicator& comm, float* data, size_t count, int root) {
  CheckRoot(comm, root, "broadcast");
  SF_TRACE_SCOPE("broadcast(float)");
  CollectiveScope scope(comm.watchdog(), "broadcast(float)", count * sizeof(float));
  BroadcastPieces(comm, data, count, MPI_FLOAT, sizeof(float), root);
}

void Broadcast(Communicator& comm, double* data, size_t count, int root) {
  CheckRoot(comm, root, "broadcast");
  SF_TRACE_SCOPE("broadcast(double)");
  CollectiveScope scope(comm.watchdog(), "broadcast(double)", count * sizeof(double));
  BroadcastPieces(comm, data, count, MPI_DOUBLE, sizeof(double), root);
}

void BroadcastBytes(Communicator& comm, void* bytes, size_t size, int root) {
  CheckRoot(comm, root, "broadcast");
  SF_TRACE_SCOPE("broadcast(bytes)");
  CollectiveScope scope(comm.watchdog(), "broadcast(bytes)", size);
  BroadcastPieces(comm, bytes, size, MPI_BYTE, 1, root);
}

void BroadcastString(Communicator& comm, std::string* text, int root) {
  uint64_t length = comm.rank() == root ? text->size() : 0;
  BroadcastBytes(comm, &length, sizeof(length), root);
  if (comm.rank() != root) text->assign(static_cast<size_t>(length), '\0');
  BroadcastBytes(comm, text->data(), text->size(), root);
}

namespace {

// One watched, traced all-reduce of `count` values; names[op] names it ("allreduce(int64 sum)").
template <typename T>
void AllreduceValues(Communicator& comm, T* values, size_t count, ReduceOp op,
                     const char* const (&names)[3], MPI_Datatype type) {
  const char* name = names[static_cast<int>(op)];
  SF_TRACE_SCOPE(name);
  CollectiveScope scope(comm.watchdog(), name, count * sizeof(T));
  AllreducePieces(comm, values, count, type, sizeof(T), op);
}

constexpr const char* kInt64Names[3] = {"allreduce(int64 sum)", "allreduce(int64 min)",
                                        "allreduce(int64 max)"};
constexpr const char* kDoubleNames[3] = {"allreduce(double sum)", "allreduce(double min)",
                                         "allreduce(double max)"};

}  // namespace

void AllreduceInt64(Communicator& comm, int64_t* values, size_t count, ReduceOp op) {
  AllreduceValues(comm, values, count, op, kInt64Names, MPI_INT64_T);
}

void AsyncAllreduceInt64::Start(Communicator& comm, int64_t value, ReduceOp op) {
  if (comm_ != nullptr) {
    throw Error(ErrorCode::kInternal, "an asynchronous all-reduce started twice");
  }
  in_ = value;
  SF_CHECK_MPI(MPI_Iallreduce(&in_, &out_, 1, MPI_INT64_T, ToMpi(op), comm.raw(), &request_));
  comm_ = &comm;
}

int64_t AsyncAllreduceInt64::Finish() {
  if (comm_ == nullptr) throw Error(ErrorCode::kInternal, "no asynchronous all-reduce to finish");
  SF_TRACE_SCOPE("allreduce(int64, async)");
  CollectiveScope scope(comm_->watchdog(), "allreduce(int64, async)", sizeof(int64_t));
  SF_CHECK_MPI(MPI_Wait(&request_, MPI_STATUS_IGNORE));
  comm_ = nullptr;
  return out_;
}

int64_t AllreduceInt64(Communicator& comm, int64_t value, ReduceOp op) {
  AllreduceInt64(comm, &value, 1, op);
  return value;
}

void AllreduceDoubles(Communicator& comm, double* values, size_t count, ReduceOp op) {
  AllreduceValues(comm, values, count, op, kDoubleNames, MPI_DOUBLE);
}

double AllreduceDouble(Communicator& comm, double value, ReduceOp op) {
  AllreduceDoubles(comm, &value, 1, op);
  return value;
}

std::vector<int64_t> AllgatherInt64(Communicator& comm, int64_t value) {
  SF_TRACE_SCOPE("allgather(int64)");
  CollectiveScope scope(comm.watchdog(), "allgather(int64)", sizeof(int64_t));
  std::vector<int64_t> all(static_cast<size_t>(comm.size()));
  SF_CHECK_MPI(MPI_Allgather(&value, 1, MPI_INT64_T, all.data(), 1, MPI_INT64_T, comm.raw()));
  return all;
}

std::vector<size_t> GatherLengths(Communicator& comm, size_t bytes, int root) {
  CheckRoot(comm, root, "gather");
  SF_TRACE_SCOPE("gather(lengths)");
  CollectiveScope scope(comm.watchdog(), "gather(lengths)", sizeof(uint64_t));
  const uint64_t mine = bytes;
  std::vector<uint64_t> all(comm.rank() == root ? static_cast<size_t>(comm.size()) : 0);
  SF_CHECK_MPI(MPI_Gather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, root, comm.raw()));
  return std::vector<size_t>(all.begin(), all.end());
}

void GatherInto(Communicator& comm, const void* data, size_t bytes,
                const std::vector<size_t>& lengths, void* out, int root) {
  CheckRoot(comm, root, "gather");
  SF_TRACE_SCOPE("gather(bytes)");
  CollectiveScope scope(comm.watchdog(), "gather(bytes)", bytes);
  RequestList requests;
  if (comm.rank() != root) {
    comm.PostSend(data, bytes, MPI_BYTE, 1, root, kGatherTag, requests);
    comm.WaitAll(requests);
    return;
  }
  if (lengths.size() != static_cast<size_t>(comm.size()) ||
      lengths[static_cast<size_t>(root)] != bytes) {
    throw Error(ErrorCode::kInvalidArgument,
                "gather lengths do not match the communicator (" + std::to_string(lengths.size()) +
                    " lengths for " + std::to_string(comm.size()) + " ranks)",
                {.rank = comm.rank()});
  }
  auto* dest = static_cast<char*>(out);
  for (int r = 0; r < comm.size(); ++r) {
    const size_t length = lengths[static_cast<size_t>(r)];
    if (r == root) {
      if (length > 0) std::memcpy(dest, data, length);
    } else {
      comm.PostRecv(dest, length, MPI_BYTE, 1, r, kGatherTag, requests);
    }
    dest += length;
  }
  comm.WaitAll(requests);
}

std::vector<std::vector<uint8_t>> GatherBytes(Communicator& comm, const void* data, size_t bytes,
                                              int root) {
  const std::vector<size_t> lengths = GatherLengths(comm, bytes, root);  // checks the root
  SF_TRACE_SCOPE("gather(blobs)");
  CollectiveScope scope(comm.watchdog(), "gather(blobs)", bytes);
  std::vector<std::vector<uint8_t>> all(lengths.size());
  RequestList requests;
  if (comm.rank() != root) {
    comm.PostSend(data, bytes, MPI_BYTE, 1, root, kGatherTag, requests);
  } else {
    for (int r = 0; r < comm.size(); ++r) {
      auto& blob = all[static_cast<size_t>(r)];
      blob.resize(lengths[static_cast<size_t>(r)]);
      if (r == root) {
        if (bytes > 0) std::memcpy(blob.data(), data, bytes);
      } else {
        comm.PostRecv(blob.data(), blob.size(), MPI_BYTE, 1, r, kGatherTag, requests);
      }
    }
  }
  comm.WaitAll(requests);
  return all;
}

void Barrier(Communicator& comm) {
  SF_TRACE_SCOPE("barrier");
  CollectiveScope scope(comm.watchdog(), "barrier", 0);
  MPI_Request request;
  SF_CHECK_MPI(MPI_Ibarrier(comm.raw(), &request));
  // Spin briefly (a barrier that everyone reaches together stays fast), then nap between polls.
  const int64_t start = MonotonicNanos();
  for (;;) {
    int done = 0;
    SF_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (MonotonicNanos() - start > 1'000'000) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
}

}  // namespace shardflow::comm
