#include "apps/train/strategies/parameter_server/sparse_tables.hpp"

#include <algorithm>
#include <cmath>
#include <new>

#include "apps/train/memory_guard.hpp"
#include "core/backend/pointwise.hpp"
#include "core/error.hpp"

namespace shardflow::train::ps {

void EncodeIds(const IdLists& lists, std::vector<int64_t>* out) {
  for (const std::vector<int64_t>& ids : lists) {
    out->push_back(static_cast<int64_t>(ids.size()));
    out->insert(out->end(), ids.begin(), ids.end());
  }
}

IdLists DecodeIds(const int64_t* v, size_t n, size_t tables, const std::string& from) {
  IdLists lists(tables);
  size_t at = 0;
  for (std::vector<int64_t>& ids : lists) {
    if (at >= n || v[at] < 0 || static_cast<uint64_t>(v[at]) > n - at - 1) {
      throw Error(ErrorCode::kInternal, "malformed id lists from " + from + ": " +
                                            std::to_string(n) + " values for " +
                                            std::to_string(tables) + " tables");
    }
    const size_t count = static_cast<size_t>(v[at++]);
    ids.assign(v + at, v + at + count);
    at += count;
  }
  if (at != n) {
    throw Error(ErrorCode::kInternal, "malformed id lists from " + from + ": " +
                                          std::to_string(n - at) + " values left over");
  }
  return lists;
}

RowRange RowsOf(int64_t rows, int server, int servers) {
  const int64_t each = (rows + servers - 1) / servers;
  return {std::min(rows, each * server), std::min(rows, each * (server + 1))};
}

int ServerOf(int64_t id, int64_t rows, int servers) {
  return static_cast<int>(id / ((rows + servers - 1) / servers));
}

// ---------------------------------------------------------------- worker

SparseWindows::SparseWindows(std::vector<RemoteTable<float>*> tables, int servers)
    : tables_(std::move(tables)),
      servers_(servers),
      owner_(tables_.size()),
      by_server_(static_cast<size_t>(servers), IdLists(tables_.size())),
      rows_(static_cast<size_t>(servers)) {}

void SparseWindows::Prepare(const Tensor* x) {
  for (size_t t = 0; t < tables_.size(); ++t) {
    std::vector<int64_t> ids;
    if (x != nullptr) ids = tables_[t]->BatchIds(*x);
    for (IdLists& lists : by_server_) lists[t].clear();
    owner_[t].resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      const int k = ServerOf(ids[i], tables_[t]->rows(), servers_);
      owner_[t][i] = k;
      by_server_[static_cast<size_t>(k)][t].push_back(ids[i]);
    }
    tables_[t]->SetWindow(std::move(ids));
  }
  for (int k = 0; k < servers_; ++k) rows_[static_cast<size_t>(k)].resize(row_floats(k));
}

size_t SparseWindows::row_floats(int server) const {
  size_t n = 0;
  for (size_t t = 0; t < tables_.size(); ++t) {
    n += by_server_[static_cast<size_t>(server)][t].size() * static_cast<size_t>(tables_[t]->dim());
  }
  return n;
}

// Window row i holds id ids[i]; its server sent it as the next of its ids of this table.
void SparseWindows::Scatter() {
  std::vector<size_t> at(static_cast<size_t>(servers_), 0);  // each server's next float
  for (size_t t = 0; t < tables_.size(); ++t) {
    const size_t dim = static_cast<size_t>(tables_[t]->dim());
    float* window = tables_[t]->window_rows();
    for (size_t i = 0; i < owner_[t].size(); ++i) {
      const size_t k = static_cast<size_t>(owner_[t][i]);
      std::copy_n(rows_[k].data() + at[k], dim, window + i * dim);
      at[k] += dim;
    }
  }
}

void SparseWindows::GatherGrads(int server, std::vector<float>* out) const {
  out->clear();
  for (size_t t = 0; t < tables_.size(); ++t) {
    const size_t dim = static_cast<size_t>(tables_[t]->dim());
    const float* grads = tables_[t]->window_grads();
    for (size_t i = 0; i < owner_[t].size(); ++i) {
      if (owner_[t][i] == server) out->insert(out->end(), grads + i * dim, grads + (i + 1) * dim);
    }
  }
}

int64_t SparseWindows::window_rows() const {
  int64_t n = 0;
  for (const RemoteTable<float>* table : tables_) {
    n += static_cast<int64_t>(table->window_ids().size());
  }
  return n;
}

// ---------------------------------------------------------------- server

namespace {

// The dense optimizer's slot names, in its order (core/optim/optimizer.cpp).
std::vector<std::string> SlotNames(const OptimizerOptions& o) {
  if (o.name == "sgd") return {"velocity"};
  if (o.name == "adagrad") return {"accumulator"};
  return {"m", "v"};
}

}  // namespace

// The shard's slot arenas under the dense optimizer's name and slot names: what a checkpoint
// part carries. Never steps.
class SparseShard::SlotArenas final : public Optimizer {
 public:
  SlotArenas(const OptimizerOptions& o, int64_t n) : name_(o.name) {
    for (const std::string& slot : SlotNames(o)) {
      tensors_.emplace_back(DType::kFloat32, Shape{n});
      names_.push_back(slot);
    }
  }
  std::string name() const override { return name_; }
  void Step(Arena<float>&, double) override {
    throw Error(ErrorCode::kInternal, "a sparse shard's slots do not step");
  }
  std::vector<NamedTensor> Slots() override {
    std::vector<NamedTensor> out;
    for (size_t i = 0; i < tensors_.size(); ++i) out.push_back({names_[i], &tensors_[i]});
    return out;
  }
  float* slot(size_t i) { return tensors_[i].data<float>(); }

 private:
  std::string name_;
  std::vector<std::string> names_;
  std::vector<Tensor> tensors_;
};

SparseShard::SparseShard(std::vector<RemoteTable<float>*> tables, int server, int servers,
                         const OptimizerOptions& optimizer, double max_memory_mb)
    : server_(server), servers_(servers), o_(optimizer) {
  if (o_.name != "sgd" && o_.name != "adagrad" && o_.name != "adam" && o_.name != "adamw") {
    throw Error(
        ErrorCode::kInvalidArgument,
        "sparse tables on the servers update rows with sgd, adagrad, adam or adamw, not " + o_.name,
        {.key = "train.optimizer", .hint = "or dist.ps_tables = dense"});
  }
  for (RemoteTable<float>* layer : tables) {
    Table t;
    t.layer = layer;
    t.dim = layer->dim();
    t.range = RowsOf(layer->rows(), server, servers);
    t.ready.resize(static_cast<size_t>(t.range.end - t.range.begin));
    tables_.push_back(std::move(t));
  }
  int64_t n = 0;  // laid out as an arena: the last layer's table first
  for (auto t = tables_.rbegin(); t != tables_.rend(); ++t) {
    t->offset = n;
    n += (t->range.end - t->range.begin) * t->dim;
  }
  const size_t copies = 1 + SlotNames(o_).size();
  const int64_t need = n * static_cast<int64_t>(copies * sizeof(float));
  const int64_t cap =
      max_memory_mb > 0 ? static_cast<int64_t>(max_memory_mb * (1 << 20)) : AvailableMemoryBytes();
  if (cap > 0 && need > cap) {
    throw Error(ErrorCode::kInvalidArgument,
                "parameter server " + std::to_string(server) + " of " + std::to_string(servers) +
                    " needs " + std::to_string(need >> 20) +
                    " MiB for its rows of the sparse tables with " + o_.name + " state; " +
                    (max_memory_mb > 0 ? "train.max_memory_mb is " : "this node has ") +
                    std::to_string(cap >> 20) + " MiB" + (max_memory_mb > 0 ? "" : " available"),
                {.key = max_memory_mb > 0 ? "train.max_memory_mb" : "dist.ps_ranks",
                 .hint = "more servers (on more nodes) hold fewer rows each"});
  }
  w_.resize(static_cast<size_t>(n));
  slots_ = std::make_unique<SlotArenas>(o_, n);
  if (o_.name == "adagrad") {
    std::fill(slots_->slot(0), slots_->slot(0) + n, kAdagradInitialAccumulator);
  }
}

SparseShard::~SparseShard() = default;

void SparseShard::CheckIds(const IdLists& ids, const std::string& from) const {
  for (size_t t = 0; t < tables_.size(); ++t) {
    for (int64_t id : ids[t]) {
      if (id < tables_[t].range.begin || id >= tables_[t].range.end) {
        throw Error(ErrorCode::kInternal,
                    from + " asked server " + std::to_string(server_) + " of " +
                        std::to_string(servers_) + " for id " + std::to_string(id) + " of " +
                        tables_[t].layer->table_spec() + ", which holds rows [" +
                        std::to_string(tables_[t].range.begin) + ", " +
                        std::to_string(tables_[t].range.end) + ")");
      }
    }
  }
}

size_t SparseShard::RowFloats(const IdLists& ids) const {
  size_t n = 0;
  for (size_t t = 0; t < tables_.size(); ++t) {
    n += ids[t].size() * static_cast<size_t>(tables_[t].dim);
  }
  return n;
}

float* SparseShard::Row(Table& t, int64_t local) {
  float* row = w_.data() + t.offset + local * t.dim;
  if (!t.ready[static_cast<size_t>(local)]) {
    t.layer->InitialRow(t.range.begin + local, row);
    t.ready[static_cast<size_t>(local)] = true;
  }
  return row;
}

void SparseShard::Gather(const IdLists& ids, float* out) {
  for (size_t t = 0; t < tables_.size(); ++t) {
    Table& table = tables_[t];
    for (int64_t id : ids[t]) {
      out = std::copy_n(Row(table, id - table.range.begin), table.dim, out);
    }
  }
}

// One row's update by the dense optimizer's own per-weight rules (core/backend/pointwise.hpp,
// core/optim/optimizer.hpp); the tables are never weight-decayed (declared decay = false).
void SparseShard::Update(Table& t, int64_t local, const float* g, float scale, double lr) {
  float* w = Row(t, local);
  const int64_t at = t.offset + local * t.dim;
  const float rate = static_cast<float>(lr);
  if (o_.name == "adagrad") {
    float* a = slots_->slot(0) + at;
    const float eps = static_cast<float>(o_.epsilon);
    for (int64_t d = 0; d < t.dim; ++d) AdagradUpdate(rate, 0.0f, eps, w[d], g[d] * scale, a[d]);
  } else if (o_.name == "sgd") {
    float* v = slots_->slot(0) + at;
    const float mu = static_cast<float>(o_.momentum);
    for (int64_t d = 0; d < t.dim; ++d) {
      const float gd = g[d] * scale;
      if (mu == 0.0f) {
        pointwise::SgdPlain(w[d], gd, rate, 0.0f);
      } else if (o_.nesterov) {
        pointwise::SgdNesterov(w[d], gd, v[d], rate, mu, 0.0f);
      } else {
        pointwise::SgdMomentum(w[d], gd, v[d], rate, mu, 0.0f);
      }
    }
  } else {  // lazy adam / adamw, as core/optim's Adam folds the bias corrections
    float* m = slots_->slot(0) + at;
    float* v = slots_->slot(1) + at;
    const double n = static_cast<double>(iterations_);
    const pointwise::AdamConstants<float> c{
        .b1 = static_cast<float>(o_.beta1),
        .b2 = static_cast<float>(o_.beta2),
        .l2 = 0.0f,
        .shrink = 1.0f,
        .step = static_cast<float>(lr * std::sqrt(1.0 - std::pow(o_.beta2, n)) /
                                   (1.0 - std::pow(o_.beta1, n))),
        .eps = static_cast<float>(o_.epsilon * std::sqrt(1.0 - std::pow(o_.beta2, n)))};
    for (int64_t d = 0; d < t.dim; ++d) pointwise::Adam(w[d], g[d] * scale, m[d], v[d], c);
  }
}

void SparseShard::Apply(const IdLists& ids, const float* grads, float scale, double lr) {
  ++iterations_;
  for (size_t t = 0; t < tables_.size(); ++t) {
    Table& table = tables_[t];
    for (int64_t id : ids[t]) {
      Update(table, id - table.range.begin, grads, scale, lr);
      grads += table.dim;
    }
  }
}

void SparseShard::Accumulate(const IdLists& ids, const float* grads) {
  for (size_t t = 0; t < tables_.size(); ++t) {
    Table& table = tables_[t];
    for (int64_t id : ids[t]) {
      const int64_t local = id - table.range.begin;
      auto [it, fresh] = table.summed.try_emplace(local, static_cast<int64_t>(table.order.size()));
      if (fresh) {
        table.order.push_back(local);
        table.sum.resize(table.sum.size() + static_cast<size_t>(table.dim), 0.0f);
      }
      float* sum = table.sum.data() + it->second * table.dim;
      for (int64_t d = 0; d < table.dim; ++d) sum[d] += grads[d];
      grads += table.dim;
    }
  }
}

void SparseShard::ApplyAccumulated(float scale, double lr) {
  ++iterations_;
  for (Table& table : tables_) {
    for (size_t i = 0; i < table.order.size(); ++i) {
      // g = sum * scale first, as the dense slice computes its mean.
      float* g = table.sum.data() + static_cast<int64_t>(i) * table.dim;
      for (int64_t d = 0; d < table.dim; ++d) g[d] *= scale;
      Update(table, table.order[i], g, 1.0f, lr);
    }
    table.summed.clear();
    table.order.clear();
    table.sum.clear();
  }
}

void SparseShard::InitialiseAll() {
  for (Table& t : tables_) {
    for (int64_t r = 0; r < t.range.end - t.range.begin; ++r) Row(t, r);
  }
}

std::vector<float> SparseShard::Rows(size_t t) {
  InitialiseAll();
  const Table& table = tables_[t];
  const auto first = w_.begin() + table.offset;
  return std::vector<float>(first, first + (table.range.end - table.range.begin) * table.dim);
}

CheckpointPart SparseShard::Part(Sequential<float>& model) {
  InitialiseAll();
  return MakePart(model);
}

CheckpointPart SparseShard::MakePart(Sequential<float>& model) {
  CheckpointPart part = MakeCheckpointPart(model, nullptr);
  part.specs.clear();
  part.buffers.clear();  // the chief's part holds them
  size_t t = 0;
  for (const ParamSpec& spec : model.arena().specs()) {
    if (spec.split_axis != 0 || spec.size != 0 || t >= tables_.size()) continue;
    const Table& table = tables_[t++];  // the tables' empty slices, in layer order
    ParamSpec mine = spec;
    mine.shape = {table.range.end - table.range.begin, table.dim};
    mine.size = NumElements(mine.shape);
    mine.split_begin = table.range.begin;
    mine.offset = table.offset;
    part.specs.push_back(mine);
  }
  part.arena_size = static_cast<int64_t>(w_.size());
  part.params = w_.data();
  slots_->set_iterations(iterations_);
  part.optimizer = slots_.get();
  return part;
}

void SparseShard::Load(const std::string& path, Sequential<float>& model, bool weights_only) {
  if (weights_only) {
    LoadWeights(path, MakePart(model));
  } else {
    LoadCheckpoint(path, MakePart(model));
    iterations_ = slots_->iterations();
  }
  for (Table& t : tables_) t.ready.assign(t.ready.size(), true);
}

int64_t SparseShard::held_rows() const {
  int64_t n = 0;
  for (const Table& t : tables_) n += t.range.end - t.range.begin;
  return n;
}

int64_t SparseShard::bytes() const {
  return static_cast<int64_t>(w_.size() * (1 + SlotNames(o_).size()) * sizeof(float));
}

}  // namespace shardflow::train::ps
