// The parameter-server strategy's sparse tables (dist.ps_tables = sparse; sparse_tables.hpp):
// the worker's windows and evaluation lookups, the server's rows, the checkpoint the chief and
// the servers write together, and the tables in FinalParams. The protocol's pull, push and
// grant carry the rows in parameter_server.cpp.
#include <cstring>

#include "apps/train/strategies/parameter_server/parameter_server_internal.hpp"
#include "comm/collectives.hpp"
#include "core/logging.hpp"
#include "core/trace.hpp"

namespace shardflow::train::ps {

// The sparse tables: a worker's windows, a server's rows (sparse_tables.hpp).
void ParameterServerStrategy::MakeSparse() {
  const std::vector<RemoteTable<float>*> tables = model().RemoteTables();
  sparse_ = !tables.empty();
  if (!sparse_) return;
  if (!server_) {
    windows_ = std::make_unique<SparseWindows>(tables, num_servers_);
    requests_.resize(static_cast<size_t>(num_servers_));
    grad_rows_.resize(static_cast<size_t>(num_servers_));
    return;
  }
  const int k = roles_.server_index(ps_->rank());
  shard_ = std::make_unique<SparseShard>(tables, k, num_servers_, options().optimizer,
                                         options().max_memory_mb);
  pull_ids_.assign(static_cast<size_t>(num_workers_), IdLists(tables.size()));
  if (!resumed_from().empty()) {
    shard_->Load(resumed_from(), model(), /*weights_only=*/false);
  } else if (!options().warm_start.empty()) {
    shard_->Load(options().warm_start, model(), /*weights_only=*/true);
  }
  SF_LOG(Info) << "parameter server: server " << k << " (rank " << ps_->rank() << ") holds "
               << shard_->held_rows() << " rows of " << tables.size() << " sparse table(s) (part "
               << k + 1 << " of " << num_servers_ << " of each, a range of rows), "
               << (shard_->bytes() >> 20) << " MiB with " << options().optimizer.name << " state";
}

void ParameterServerStrategy::BeforeEvalForward(const ModelBatch& batch) {
  if (sparse_) Lookup(batch.x);
}

void ParameterServerStrategy::Lookup(const Tensor& x) {
  SF_TRACE_SCOPE("lookup");
  windows_->Prepare(&x);
  comm::RequestList requests;
  for (int k = 0; k < num_servers_; ++k) {
    std::vector<int64_t>& ask = requests_[static_cast<size_t>(k)];
    ask.clear();
    EncodeIds(windows_->ids_for(k), &ask);
    ps_->PostRecvFloats(windows_->rows_buffer(k), windows_->row_floats(k), ServerRank(k),
                        kLookupRowsTag, requests);
    ps_->PostSendBytes(ask.data(), ask.size() * sizeof(int64_t), ServerRank(k), kLookupTag,
                       requests);
  }
  ps_->WaitAll(requests);
  windows_->Scatter();
}

// Sparse tables: the chief writes the dense parameters and every server its rows, into one
// ordinary checkpoint (sparse_tables.hpp); kStateTag 2 asks the servers to join.
std::string ParameterServerStrategy::WriteCheckpoint(const TrainingState& state) {
  if (!sparse_) return ReplicaStrategy::WriteCheckpoint(state);
  comm::RequestList requests;
  const int64_t join = 2;
  for (int k = 0; k < num_servers_; ++k) {
    ps_->PostSendBytes(&join, sizeof(join), ServerRank(k), kStateTag, requests);
  }
  ps_->WaitAll(requests);
  return SavePartitionedCheckpoint(options().checkpoint, ckpt_->raw(), model(), &optimizer(),
                                   state);
}

// An evaluation batch's rows: answered at once, whatever the workers' steps.
void ParameterServerStrategy::OnLookup(int source, size_t bytes) {
  std::vector<int64_t> ask(bytes / sizeof(int64_t));
  comm::RequestList requests;
  ps_->PostRecvBytes(ask.data(), ask.size() * sizeof(int64_t), source, kLookupTag, requests);
  ps_->WaitAll(requests);
  const std::string from = "worker rank " + std::to_string(source);
  const IdLists ids = DecodeIds(ask.data(), ask.size(), pull_ids_.front().size(), from);
  shard_->CheckIds(ids, from);
  std::vector<float> rows(shard_->RowFloats(ids));
  shard_->Gather(ids, rows.data());
  SendTo(source, kLookupRowsTag, std::move(rows));
}

std::vector<float> ParameterServerStrategy::TablesInArenaOrder(const std::vector<float>& dense) {
  const std::vector<RemoteTable<float>*> tables = model().RemoteTables();
  std::vector<int> table_of_layer(static_cast<size_t>(model().num_layers()), -1);
  for (int i = 0, t = 0; i < model().num_layers(); ++i) {
    if (model().layer(i).remote_table() != nullptr) table_of_layer[static_cast<size_t>(i)] = t++;
  }
  int64_t total = static_cast<int64_t>(dense.size());
  for (const RemoteTable<float>* t : tables) total += t->rows() * t->dim();
  std::vector<float> out;
  out.reserve(static_cast<size_t>(total));
  const Arena<float>& arena = model().arena();
  for (int id : arena.arena_order()) {
    const ParamSpec& s = arena.spec(id);
    const int t = table_of_layer[static_cast<size_t>(s.layer - model().first_layer())];
    if (t < 0 || s.size != 0) {
      out.insert(out.end(), dense.begin() + s.offset, dense.begin() + s.offset + s.size);
      continue;
    }
    const RemoteTable<float>& table = *tables[static_cast<size_t>(t)];
    const std::vector<float> mine =
        server_ ? shard_->Rows(static_cast<size_t>(t)) : std::vector<float>();
    const std::vector<std::vector<uint8_t>> parts =
        comm::GatherBytes(ctl(), mine.data(), mine.size() * sizeof(float));
    const size_t at = out.size();
    out.resize(at + static_cast<size_t>(table.rows() * table.dim()));
    if (ctl().rank() != 0) continue;
    for (int k = 0; k < num_servers_; ++k) {  // server k's rows, in place
      const std::vector<uint8_t>& rows = parts[static_cast<size_t>(ServerRank(k))];
      std::memcpy(out.data() + at + RowsOf(table.rows(), k, num_servers_).begin * table.dim(),
                  rows.data(), rows.size());
    }
  }
  comm::Broadcast(ctl(), out.data(), out.size(), 0);
  return out;
}

}  // namespace shardflow::train::ps
