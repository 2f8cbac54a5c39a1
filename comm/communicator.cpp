#include "comm/communicator.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

#include "core/check_mpi.hpp"
#include "core/error.hpp"

namespace shardflow::comm {

Communicator::Communicator(MPI_Comm comm, const CommunicatorOptions& options) {
  SF_CHECK_MPI(MPI_Comm_dup(comm, comm_.out()));
  Init(options);
}

namespace {

MPI_Comm Predefined(Group group) { return group == Group::kWorld ? MPI_COMM_WORLD : MPI_COMM_SELF; }

}  // namespace

Communicator::Communicator(Group group, const CommunicatorOptions& options)
    : Communicator(Predefined(group), options) {}

// Takes ownership of an already private communicator (from MPI_Comm_split).
Communicator::Communicator(MpiComm owned, const CommunicatorOptions& options)
    : comm_(std::move(owned)) {
  Init(options);
}

void Communicator::Init(const CommunicatorOptions& options) {
  if (options.max_message_count == 0 || options.max_message_count > kMpiMaxCount) {
    throw Error(ErrorCode::kInvalidArgument, "max_message_count must be in 1..INT_MAX",
                {.key = "max_message_count"});
  }
  max_message_count_ = options.max_message_count;
  SF_CHECK_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  SF_CHECK_MPI(MPI_Comm_rank(comm_.get(), &rank_));
  SF_CHECK_MPI(MPI_Comm_size(comm_.get(), &size_));
  local_size_ = max_local_size_ = 1;
  local_rank_ = 0;
  num_nodes_ = size_;
  if (options.discover_topology) {
    CommunicatorOptions sub;
    sub.discover_topology = false;
    sub.watchdog = std::nullopt;
    sub.max_message_count = options.max_message_count;
    MpiComm node_comm;
    if (options.emulated_ranks_per_node > 0) {
      SF_CHECK_MPI(MPI_Comm_split(comm_.get(), rank_ / options.emulated_ranks_per_node, rank_,
                                  node_comm.out()));
    } else {
      SF_CHECK_MPI(MPI_Comm_split_type(comm_.get(), MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL,
                                       node_comm.out()));
    }
    node_.reset(new Communicator(std::move(node_comm), sub));
    local_rank_ = node_->rank();
    local_size_ = node_->size();
    MpiComm leader_comm;
    SF_CHECK_MPI(MPI_Comm_split(comm_.get(), local_rank_ == 0 ? 0 : MPI_UNDEFINED, rank_,
                                leader_comm.out()));
    if (leader_comm) leaders_.reset(new Communicator(std::move(leader_comm), sub));
    int leader = local_rank_ == 0 ? 1 : 0;
    SF_CHECK_MPI(MPI_Allreduce(&leader, &num_nodes_, 1, MPI_INT, MPI_SUM, comm_.get()));
    SF_CHECK_MPI(MPI_Allreduce(&local_size_, &max_local_size_, 1, MPI_INT, MPI_MAX, comm_.get()));
    // Block placement: this node's ranks span exactly local_size consecutive ranks.
    int span[2] = {-rank_, rank_};  // -min, max
    SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, span, 2, MPI_INT, MPI_MAX, node_->raw()));
    int contiguous = span[1] + span[0] + 1 == local_size_ ? 1 : 0;
    SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &contiguous, 1, MPI_INT, MPI_MIN, comm_.get()));
    nodes_contiguous_ = contiguous == 1;
  }
  if (options.watchdog) watchdog_ = std::make_unique<Watchdog>(comm_.get(), *options.watchdog);
}

Communicator::~Communicator() {
  shm_state_.reset();
  watchdog_.reset();
  leaders_.reset();
  node_.reset();
  // comm_ is freed last, by its own destructor.
}

std::unique_ptr<Communicator> Communicator::Split(int color, int key,
                                                  const CommunicatorOptions& options) const {
  MpiComm out;
  SF_CHECK_MPI(MPI_Comm_split(comm_.get(), color, key, out.out()));
  if (!out) return nullptr;
  return std::unique_ptr<Communicator>(new Communicator(std::move(out), options));
}

namespace {

// Calls post(piece pointer, piece count) for each int-sized piece of `count` elements at `data`.
template <typename Void, typename Post>
void ForEachPiece(Void* data, size_t count, size_t elem_bytes, size_t limit, Post post) {
  using Byte = std::conditional_t<std::is_const_v<Void>, const char, char>;
  auto* bytes = static_cast<Byte*>(data);
  for (size_t i = 0; i < NumMessagePieces(count, limit); ++i) {
    const MessagePiece piece = MessagePieceAt(count, limit, i);
    post(bytes + piece.offset * elem_bytes, piece.count);
  }
}

}  // namespace

void Communicator::PostSend(const void* data, size_t count, MPI_Datatype type, size_t elem_bytes,
                            int dest, int tag, RequestList& requests) const {
  ForEachPiece(data, count, elem_bytes, max_message_count_, [&](const char* p, int n) {
    MPI_Request request;
    SF_CHECK_MPI(MPI_Isend(p, n, type, dest, tag, comm_.get(), &request));
    requests.Add(
        request,
        {.is_send = true, .peer = dest, .tag = tag, .bytes = static_cast<size_t>(n) * elem_bytes});
  });
}

void Communicator::PostRecv(void* data, size_t count, MPI_Datatype type, size_t elem_bytes,
                            int source, int tag, RequestList& requests) const {
  ForEachPiece(data, count, elem_bytes, max_message_count_, [&](char* p, int n) {
    MPI_Request request;
    SF_CHECK_MPI(MPI_Irecv(p, n, type, source, tag, comm_.get(), &request));
    requests.Add(request, {.is_send = false,
                           .peer = source,
                           .tag = tag,
                           .bytes = static_cast<size_t>(n) * elem_bytes});
  });
}

void Communicator::WaitAll(RequestList& requests) const {
  if (requests.empty()) return;
  if (watchdog_ != nullptr && !watchdog_->in_collective()) {
    // Clear the list whatever happens: WaitPointToPoint completes or abandons every request.
    struct ClearOnExit {
      RequestList& list;
      ~ClearOnExit() { list.Clear(); }
    } clear{requests};
    WaitPointToPoint(requests.requests_, requests.ops_, watchdog_->timeout_seconds(), rank_);
    return;
  }
  SF_CHECK_MPI(MPI_Waitall(static_cast<int>(requests.requests_.size()), requests.requests_.data(),
                           MPI_STATUSES_IGNORE));
  requests.Clear();
}

void Communicator::PostSendFloats(const float* data, size_t count, int dest, int tag,
                                  RequestList& requests) const {
  PostSend(data, count, MPI_FLOAT, sizeof(float), dest, tag, requests);
}

void Communicator::PostRecvFloats(float* data, size_t count, int source, int tag,
                                  RequestList& requests) const {
  PostRecv(data, count, MPI_FLOAT, sizeof(float), source, tag, requests);
}

void Communicator::PostSendBytes(const void* data, size_t bytes, int dest, int tag,
                                 RequestList& requests) const {
  PostSend(data, bytes, MPI_BYTE, 1, dest, tag, requests);
}

void Communicator::PostRecvBytes(void* data, size_t bytes, int source, int tag,
                                 RequestList& requests) const {
  PostRecv(data, bytes, MPI_BYTE, 1, source, tag, requests);
}

std::optional<Communicator::Envelope> Communicator::Poll(int tag) const {
  int flag = 0;
  MPI_Status status;
  SF_CHECK_MPI(
      MPI_Iprobe(MPI_ANY_SOURCE, tag < 0 ? MPI_ANY_TAG : tag, comm_.get(), &flag, &status));
  if (flag == 0) return std::nullopt;
  int count = 0;
  SF_CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &count));
  return Envelope{
      .source = status.MPI_SOURCE, .tag = status.MPI_TAG, .bytes = static_cast<size_t>(count)};
}

bool Communicator::TestAll(RequestList& requests) const {
  if (requests.empty()) return true;
  int done = 0;
  SF_CHECK_MPI(MPI_Testall(static_cast<int>(requests.requests_.size()), requests.requests_.data(),
                           &done, MPI_STATUSES_IGNORE));
  if (done != 0) requests.Clear();
  return done != 0;
}

void Communicator::SendRecv(const void* send, size_t send_count, int dest, void* recv,
                            size_t recv_count, int source, MPI_Datatype type, size_t elem_bytes,
                            int tag) const {
  // Unguarded (no watchdog, or inside a collective) and in one piece: the library's own
  // combined call. Otherwise pieces and a guarded wait.
  const bool guarded = watchdog_ != nullptr && !watchdog_->in_collective();
  if (!guarded && send_count <= max_message_count_ && recv_count <= max_message_count_) {
    SF_CHECK_MPI(MPI_Sendrecv(send, static_cast<int>(send_count), type, dest, tag, recv,
                              static_cast<int>(recv_count), type, source, tag, comm_.get(),
                              MPI_STATUS_IGNORE));
    return;
  }
  RequestList requests;
  PostRecv(recv, recv_count, type, elem_bytes, source, tag, requests);
  PostSend(send, send_count, type, elem_bytes, dest, tag, requests);
  WaitAll(requests);
}

void Communicator::FreeDeleter::operator()(void* p) const { std::free(p); }

void* Communicator::Scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    const size_t rounded = (std::max(bytes, scratch_bytes_ * 2) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) throw std::bad_alloc();
    scratch_.reset(p);
    scratch_bytes_ = rounded;
  }
  return scratch_.get();
}

}  // namespace shardflow::comm
