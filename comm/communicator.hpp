// Communicator: shardflow's handle on a group of MPI ranks.
//
// Wraps a private duplicate of an MPI communicator (so shardflow's traffic never matches a
// user's), knows the topology (ranks per node, node leaders), owns a collective Watchdog and
// the scratch memory the all-reduce algorithms stage segments in, and offers the point-to-point
// helpers the algorithms are written with. Counts are size_t; a message longer than MPI's int
// is sent as several pieces of at most max_message_count elements (message_pieces.hpp), never
// cast.
//
//   Communicator comm(Group::kWorld, {.watchdog = WatchdogOptions{.timeout_seconds = 120}});
//   Allreduce(comm, grads.data(), grads.size(), {.mode = ReduceMode::kAverage});
//
// Thread-safety: construction, Split and destruction are collective over the ranks involved.
// All collectives and point-to-point helpers of one Communicator must be called by one thread
// at a time (typically the communication thread); different Communicators may be used from
// different threads concurrently (MPI_THREAD_MULTIPLE).
// Lifetime: destroy every Communicator before MPI_Finalize.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "comm/message_pieces.hpp"
#include "comm/mpi_handle.hpp"
#include "comm/watchdog.hpp"

namespace shardflow::comm {

struct CommunicatorOptions {
  // Find the node communicator (MPI_COMM_TYPE_SHARED) and the node-leader communicator.
  // Sub-communicators made for an algorithm's internal use turn it off.
  bool discover_topology = true;
  // > 0: pretend each node holds this many consecutive ranks (tests of hierarchical
  // algorithms on one machine). 0: the real topology.
  int emulated_ranks_per_node = 0;
  // The watchdog of collectives and point-to-point waits; nullopt disables it.
  std::optional<WatchdogOptions> watchdog = WatchdogOptions{};
  // Largest count of one MPI message. Only tests lower it (to exercise the splitting).
  // REQUIRES: 0 < max_message_count <= kMpiMaxCount.
  size_t max_message_count = kMpiMaxCount;
};

// Outstanding non-blocking operations of one Communicator; WaitAll completes them. Each request
// keeps its peer, tag and size so that a wait that times out can say what it was waiting for.
class RequestList {
 public:
  bool empty() const { return requests_.empty(); }
  size_t size() const { return requests_.size(); }

 private:
  friend class Communicator;
  void Add(MPI_Request request, const PointToPoint& op) {
    requests_.push_back(request);
    ops_.push_back(op);
  }
  void Clear() {
    requests_.clear();
    ops_.clear();
  }
  std::vector<MPI_Request> requests_;
  std::vector<PointToPoint> ops_;
};

// Which predefined group of processes a Communicator duplicates.
enum class Group {
  kWorld,  // every rank of the job
  kSelf,   // this rank alone (serial file access, single-rank helpers)
};

class Communicator {
 public:
  // Collective over `comm`: dups it (the caller keeps ownership of `comm`).
  // Throws Error(kCommunication) on an MPI failure, Error(kInvalidArgument) on bad options.
  explicit Communicator(MPI_Comm comm, const CommunicatorOptions& options = {});
  // Collective over the group's ranks: the same, for the job's world or this rank alone, so that
  // apps never name MPI's predefined communicators.
  explicit Communicator(Group group, const CommunicatorOptions& options = {});
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Rank and rank count within this rank's node.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  int num_nodes() const { return num_nodes_; }
  // True on local rank 0 of each node.
  bool is_node_leader() const { return local_rank_ == 0; }
  // Largest number of ranks on any node.
  int max_local_size() const { return max_local_size_; }
  // Every node's ranks are consecutive (block placement: Slurm's and mpirun's default), so a
  // ring in rank order crosses each node boundary once. True without discover_topology.
  bool nodes_contiguous() const { return nodes_contiguous_; }

  MPI_Comm raw() const { return comm_.get(); }
  // Without discover_topology every rank counts as a node of its own (local_size 1).
  // The ranks of this node; null when discover_topology is off.
  Communicator* node() const { return node_.get(); }
  // The node leaders, one rank per node; null on non-leaders or when discover_topology is off.
  Communicator* leaders() const { return leaders_.get(); }
  Watchdog* watchdog() const { return watchdog_.get(); }
  size_t max_message_count() const { return max_message_count_; }

  // Collective: MPI_Comm_split semantics; the result has no topology and no watchdog unless
  // `options` asks. Returns null for color == MPI_UNDEFINED.
  std::unique_ptr<Communicator> Split(int color, int key, const CommunicatorOptions& options) const;

  // Point-to-point on this communicator, `count` elements of `type` (element size `elem_bytes`)
  // split into int-sized pieces. Post* append one request per piece to `requests`.
  // REQUIRES: the buffers stay valid until the requests complete.
  void PostSend(const void* data, size_t count, MPI_Datatype type, size_t elem_bytes, int dest,
                int tag, RequestList& requests) const;
  void PostRecv(void* data, size_t count, MPI_Datatype type, size_t elem_bytes, int source, int tag,
                RequestList& requests) const;
  // The same for float32, so that callers outside comm/ never name an MPI datatype (the
  // pipeline's activations and gradients).
  void PostSendFloats(const float* data, size_t count, int dest, int tag,
                      RequestList& requests) const;
  void PostRecvFloats(float* data, size_t count, int source, int tag, RequestList& requests) const;
  // Raw bytes (a parameter server's small requests and headers).
  void PostSendBytes(const void* data, size_t bytes, int dest, int tag,
                     RequestList& requests) const;
  void PostRecvBytes(void* data, size_t bytes, int source, int tag, RequestList& requests) const;
  // Never blocks: the envelope of a message waiting to be received from any rank (with `tag`,
  // or any tag when tag < 0), or nullopt. The message stays queued until received. For
  // messages of at most max_message_count() bytes (one piece).
  struct Envelope {
    int source = -1;
    int tag = -1;
    size_t bytes = 0;
  };
  std::optional<Envelope> Poll(int tag = -1) const;
  // Completes and clears `requests`. Outside a collective, with a watchdog, the wait is
  // guarded: not complete within the watchdog timeout, it cancels what it can and throws
  // Error(kCommunication) naming the operation, the peer rank and the seconds waited
  // (WaitPointToPoint). Inside a collective the collective watchdog covers it.
  void WaitAll(RequestList& requests) const;
  // Never blocks: true when every request of `requests` has completed (the list is then
  // cleared), false when some is still pending (the list is kept; test again or WaitAll).
  bool TestAll(RequestList& requests) const;
  // Sends to dest and receives from source at once (both may be the same rank); guarded as
  // WaitAll.
  void SendRecv(const void* send, size_t send_count, int dest, void* recv, size_t recv_count,
                int source, MPI_Datatype type, size_t elem_bytes, int tag) const;

  // Scratch memory for one collective at a time, grown on demand, 64-byte aligned. Valid until
  // the next Scratch call on this communicator.
  void* Scratch(size_t bytes);

  // State an algorithm keeps with the communicator between calls (the shared-memory window of
  // allreduce_shm.cpp), type-erased; released before the communicator itself.
  std::shared_ptr<void>& shm_state() { return shm_state_; }
  // Set once a shared-memory window could not be had on this communicator (on every rank
  // alike); auto stops choosing shm for it.
  bool shm_unavailable() const { return shm_unavailable_; }
  void set_shm_unavailable() { shm_unavailable_ = true; }

 private:
  Communicator(MpiComm owned, const CommunicatorOptions& options);
  void Init(const CommunicatorOptions& options);

  MpiComm comm_;  // declared first: freed after everything that uses it
  int rank_ = 0;
  int size_ = 1;
  int local_rank_ = 0;
  int local_size_ = 1;
  int num_nodes_ = 1;
  int max_local_size_ = 1;
  bool nodes_contiguous_ = true;
  size_t max_message_count_ = kMpiMaxCount;
  std::unique_ptr<Communicator> node_;
  std::unique_ptr<Communicator> leaders_;
  std::unique_ptr<Watchdog> watchdog_;
  struct FreeDeleter {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, FreeDeleter> scratch_;
  size_t scratch_bytes_ = 0;
  std::shared_ptr<void> shm_state_;
  bool shm_unavailable_ = false;
};

}  // namespace shardflow::comm
