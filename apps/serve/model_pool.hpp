// The served model: one instance per replica, switched as a whole on reload, and the replica
// threads that run batches through it.
//
// A ModelSnapshot holds one model per replica (a model's forward pass keeps per-call buffers,
// so replicas never share one) and the version it serves (the checkpoint's step). ModelPool
// publishes snapshots: Reload() loads the newest checkpoint into a new snapshot (one load at a
// time) and swaps it in; a replica takes Current() at the start of each batch and keeps it for
// the whole batch, so a reload switches models between batches, never inside one, and the old
// snapshot is freed when the last replica using it finishes its batch. No request is dropped or
// failed by a reload; a load that fails leaves the served model in place.
// Thread-safety: ModelPool's members may be called from any thread. Replicas owns its threads;
// Join() after the queue is closed.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "apps/serve/batch_queue.hpp"
#include "apps/serve/serve_metrics.hpp"
#include "apps/serve/signature.hpp"
#include "core/model.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow::serve {

struct ModelSnapshot {
  int64_t version = 0;
  std::string checkpoint;  // the file loaded
  std::vector<std::unique_ptr<Sequential<float>>> replicas;
};

class ModelPool {
 public:
  // `loader` builds a snapshot from the newest checkpoint; `newest` names the newest
  // checkpoint's identity (path and modification time) cheaply, without loading it.
  using Loader = std::function<std::shared_ptr<ModelSnapshot>()>;
  using Newest = std::function<std::string()>;

  // Loads the first snapshot (throws what the loader throws).
  ModelPool(Loader loader, Newest newest);

  // Loads and switches to the newest checkpoint when it differs from the served one (always
  // when `force`). Returns true when it switched. Throws the loader's Error; the served model
  // stays.
  bool Reload(bool force) EXCLUDES(load_mu_, mu_);
  std::shared_ptr<const ModelSnapshot> Current() const EXCLUDES(mu_);
  int64_t version() const EXCLUDES(mu_);

 private:
  const Loader loader_;
  const Newest newest_;
  Mutex load_mu_ ACQUIRED_BEFORE(mu_);  // one load at a time
  std::string loaded_key_ GUARDED_BY(load_mu_);
  mutable Mutex mu_;
  std::shared_ptr<const ModelSnapshot> current_ GUARDED_BY(mu_);
};

// The loader of shardflow-serve: `replicas` models of `setup` from `checkpoint` (a file, or a
// directory's newest intact checkpoint, as shardflow-predict loads), version = its step.
ModelPool::Loader CheckpointLoader(const apps::ModelSetup& setup, std::string checkpoint,
                                   int replicas);
// The newest checkpoint's path and modification time ("" when there is none).
ModelPool::Newest NewestCheckpoint(std::string checkpoint);

// `count` threads, each replica i running PopBatch -> snapshot.replicas[i] -> answer each job.
// The constructor sets the process's intra-op threads (cpu::SetIntraOpThreads, each replica's
// kernels use that many) before any replica starts: left unset, the first kernel of each
// replica would set it lazily, two threads writing Eigen's global at once.
class Replicas {
 public:
  // `thread_setup` runs first on each replica thread (a GPU: make its device current there).
  Replicas(BatchQueue& queue, ModelPool& pool, const Signature& sig, ServeMetrics& metrics,
           int count, int intra_op_threads, std::function<void()> thread_setup = {});
  ~Replicas();
  Replicas(const Replicas&) = delete;
  Replicas& operator=(const Replicas&) = delete;

  // Returns when the queue is closed and drained.
  void Join();

 private:
  void Loop(size_t replica, const std::function<void()>& thread_setup);
  void RunBatch(size_t replica, std::vector<std::shared_ptr<Job>>& jobs, Tensor* scratch);

  BatchQueue& queue_;
  ModelPool& pool_;
  const Signature& sig_;
  ServeMetrics& metrics_;
  std::vector<std::thread> threads_;
};

}  // namespace shardflow::serve
