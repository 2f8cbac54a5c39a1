// Sparse tables on the parameter servers (dist.ps_tables = sparse; docs/design.md decision 81).
//
// The model's embedding-bag and wide tables (core/layers/remote_table.hpp) are not in the
// arena: server k of K holds a contiguous range of each table's rows (RowRange: ceil(N / K)
// rows each, the last fewer), with their optimizer state, and
// the workers hold only the window of rows their batch names. A worker's step: the distinct
// ids of its batch, split by server, go with its pull; each server answers with those rows
// (after the dense slice, gated by dist.max_staleness as before); after backward the worker
// pushes the window's gradient rows in the same order, and the server applies them row by row:
//   sgd      the dense rule on each touched row (momentum: the row's velocity moves only when
//            the row is touched, as TensorFlow's sparse momentum)
//   adagrad  the dense rule (AdagradUpdate): an untouched row's gradient is 0, which leaves its
//            weights and accumulator unchanged, so sparse and dense agree bit for bit
//   adam     lazy Adam (tf.keras LazyAdam): m and v of the touched rows only, bias corrections
//            from the server's update count; adamw the same with decoupled decay
// Synchronous servers (max_staleness 0) sum the step's pushes row by row and apply their mean
// once, as the dense slice; asynchronous ones apply each push on arrival, scaled by 1/W.
// Rows start as the whole table's Initialize draws them (RemoteTable::InitialRow), each when it
// is first read, so a server's start costs nothing and a never-seen row costs no draw.
// Checkpoints: a server's rows are a slice along the rows of the whole table, so the chief and
// the servers write one ordinary checkpoint together (SavePartitionedCheckpoint: the chief the
// dense parameters, each server its rows and their optimizer slots, under the dense
// optimizer's slot names); it resumes on any server or worker count, or any strategy, and
// shardflow-predict and -serve read it as any other (Part, Load).
// Wire form of id lists: int64 [n_0, ids_0..., n_1, ids_1...], one list per table.
// Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/layers/remote_table.hpp"
#include "core/optim/optimizer.hpp"
#include "io/checkpoint/checkpoint.hpp"

namespace shardflow::train::ps {

// One id list per table.
using IdLists = std::vector<std::vector<int64_t>>;

// Server k's rows of a table of `rows` rows: [begin, end).
struct RowRange {
  int64_t begin = 0, end = 0;
};
RowRange RowsOf(int64_t rows, int server, int servers);
int ServerOf(int64_t id, int64_t rows, int servers);

// Appends the wire form of `lists` to `out`.
void EncodeIds(const IdLists& lists, std::vector<int64_t>* out);
// Reads `tables` lists from v[0, n); Error(kInternal) naming `from` when the message is not
// exactly that.
IdLists DecodeIds(const int64_t* v, size_t n, size_t tables, const std::string& from);

// A worker's windows: the batch's distinct ids per table, split over the servers.
class SparseWindows {
 public:
  SparseWindows(std::vector<RemoteTable<float>*> tables, int servers);
  // Sets every table's window to the ids `x` names (an empty x: empty windows).
  void Prepare(const Tensor* x);
  const IdLists& ids_for(int server) const { return by_server_[static_cast<size_t>(server)]; }
  // Floats of server `server`'s rows (sum over tables of ids x D), and where they land.
  size_t row_floats(int server) const;
  float* rows_buffer(int server) { return rows_[static_cast<size_t>(server)].data(); }
  // The landed rows into the windows.
  void Scatter();
  // The windows' gradient rows for `server`, in its ids' order.
  void GatherGrads(int server, std::vector<float>* out) const;
  int64_t window_rows() const;  // distinct ids of the batch, over tables

 private:
  std::vector<RemoteTable<float>*> tables_;
  int servers_;
  std::vector<std::vector<int>> owner_;   // [table][window row]: its server
  std::vector<IdLists> by_server_;        // [server][table] ids
  std::vector<std::vector<float>> rows_;  // [server] rows of every table, table after table
};

// Server `server` of `servers`: its rows of every table and their optimizer state, in one
// arena of rows (table after table) and one arena per optimizer slot.
class SparseShard {
 public:
  // Refuses rows that need more than `max_memory_mb` (> 0), or the node's available memory,
  // with one line naming both.
  SparseShard(std::vector<RemoteTable<float>*> tables, int server, int servers,
              const OptimizerOptions& optimizer, double max_memory_mb);
  ~SparseShard();
  // Every id in range for its table and this server's; Error(kInternal) naming `from` if not.
  void CheckIds(const IdLists& ids, const std::string& from) const;
  size_t RowFloats(const IdLists& ids) const;
  void Gather(const IdLists& ids, float* out);
  // Asynchronous: the gradient rows scaled by `scale`, applied now (one update).
  void Apply(const IdLists& ids, const float* grads, float scale, double lr);
  // Synchronous: rows summed over a step's pushes, then their mean applied once.
  void Accumulate(const IdLists& ids, const float* grads);
  void ApplyAccumulated(float scale, double lr);
  // Table `t`'s rows this server holds (RowsOf), every one initialised (FinalParams).
  std::vector<float> Rows(size_t t);
  // This server's part of a checkpoint of `model` (its tables' row slices, whose empty specs in
  // the model's arena name them); valid while the shard lives and is not updated.
  CheckpointPart Part(Sequential<float>& model);
  // Loads this server's rows, and their optimizer state unless `weights_only` (a warm start),
  // from the checkpoint at `path`.
  void Load(const std::string& path, Sequential<float>& model, bool weights_only);
  int64_t held_rows() const;
  int64_t bytes() const;  // weights and optimizer state

 private:
  struct Table {
    RemoteTable<float>* layer = nullptr;
    int64_t dim = 0;
    RowRange range;
    int64_t offset = 0;                           // of its first row in the arenas
    std::vector<bool> ready;                      // row initialised
    std::unordered_map<int64_t, int64_t> summed;  // synchronous: local row -> place in sum
    std::vector<int64_t> order;                   // synchronous: touched local rows
    std::vector<float> sum;
  };
  class SlotArenas;  // the slot arenas as an Optimizer, for checkpoint parts
  float* Row(Table& t, int64_t local);
  void Update(Table& t, int64_t local, const float* g, float scale, double lr);
  void InitialiseAll();
  CheckpointPart MakePart(Sequential<float>& model);

  std::vector<Table> tables_;
  int server_, servers_;
  OptimizerOptions o_;
  int64_t iterations_ = 0;  // updates applied (lazy Adam's bias corrections)
  std::vector<float> w_;    // every table's rows
  std::unique_ptr<SlotArenas> slots_;
};

}  // namespace shardflow::train::ps
