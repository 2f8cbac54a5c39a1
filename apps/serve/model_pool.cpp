#include "apps/serve/model_pool.hpp"

#include <cstring>
#include <filesystem>

#include "apps/common/prediction/model_loader.hpp"
#include "core/cpu/gemm.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"
#include "io/checkpoint/checkpoint.hpp"

namespace shardflow::serve {

ModelPool::ModelPool(Loader loader, Newest newest)
    : loader_(std::move(loader)), newest_(std::move(newest)) {
  MutexLock load(load_mu_);
  loaded_key_ = newest_();
  std::shared_ptr<const ModelSnapshot> first = loader_();
  MutexLock lock(mu_);
  current_ = std::move(first);
}

bool ModelPool::Reload(bool force) {
  MutexLock load(load_mu_);
  const std::string key = newest_();
  if (!force && key == loaded_key_) return false;
  std::shared_ptr<const ModelSnapshot> next = loader_();  // throws: the served model stays
  loaded_key_ = key;
  MutexLock lock(mu_);
  current_ = std::move(next);
  return true;
}

std::shared_ptr<const ModelSnapshot> ModelPool::Current() const {
  MutexLock lock(mu_);
  return current_;
}

int64_t ModelPool::version() const {
  MutexLock lock(mu_);
  return current_->version;
}

ModelPool::Loader CheckpointLoader(const apps::ModelSetup& setup, std::string checkpoint,
                                   int replicas) {
  return [setup, checkpoint = std::move(checkpoint), replicas] {
    auto snapshot = std::make_shared<ModelSnapshot>();
    for (int i = 0; i < replicas; ++i) {
      // Every replica loads the same file: the newest may change between two loads.
      apps::LoadedModel loaded = apps::LoadModel(setup, i == 0 ? checkpoint : snapshot->checkpoint);
      if (i == 0) snapshot->checkpoint = loaded.checkpoint;
      snapshot->replicas.push_back(std::move(loaded.model));
    }
    snapshot->version = ReadCheckpointInfo(snapshot->checkpoint).step;
    return snapshot;
  };
}

ModelPool::Newest NewestCheckpoint(std::string checkpoint) {
  return [checkpoint = std::move(checkpoint)]() -> std::string {
    namespace fs = std::filesystem;
    std::error_code ec;
    std::string path = checkpoint;
    if (fs::is_directory(checkpoint, ec)) {
      const std::vector<std::string> all = ListCheckpoints(CheckpointOptions{.dir = checkpoint});
      if (all.empty()) return "";
      path = all.back();
    }
    const auto mtime = fs::last_write_time(path, ec);
    return path + "@" + std::to_string(ec ? 0 : mtime.time_since_epoch().count());
  };
}

Replicas::Replicas(BatchQueue& queue, ModelPool& pool, const Signature& sig, ServeMetrics& metrics,
                   int count, int intra_op_threads, std::function<void()> thread_setup)
    : queue_(queue), pool_(pool), sig_(sig), metrics_(metrics) {
  cpu::SetIntraOpThreads(intra_op_threads);
  for (int i = 0; i < count; ++i) {
    threads_.emplace_back([this, i, thread_setup] { Loop(static_cast<size_t>(i), thread_setup); });
  }
}

Replicas::~Replicas() {
  queue_.Close();
  Join();
}

void Replicas::Join() {
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void Replicas::Loop(size_t replica, const std::function<void()>& thread_setup) {
  cpu::FlushDenormalsOnThisThread();
  if (thread_setup) thread_setup();
  std::vector<std::shared_ptr<Job>> jobs;
  Tensor scratch;
  while (queue_.PopBatch(&jobs)) RunBatch(replica, jobs, &scratch);
}

void Replicas::RunBatch(size_t replica, std::vector<std::shared_ptr<Job>>& jobs, Tensor* scratch) {
  int64_t rows = 0;
  for (const auto& job : jobs) rows += job->num_rows();
  metrics_.RecordBatch(rows);
  std::shared_ptr<const ModelSnapshot> snapshot = pool_.Current();  // held for the batch
  BatchResults results;
  std::string error;
  try {
    // One tensor of the batch's rows, as the pipeline batches records, then the model's view.
    Shape shape = sig_.shape;
    shape.insert(shape.begin(), rows);
    Tensor stacked(sig_.dtype, shape);
    auto* dst = static_cast<uint8_t*>(stacked.raw_data());
    for (const auto& job : jobs) {
      std::memcpy(dst, job->rows.raw_data(), job->rows.byte_size());
      dst += job->rows.byte_size();
    }
    pipeline::Element batch;
    batch.Set(sig_.input_name, std::move(stacked));
    const apps::ModelBatch mb = apps::ToModelBatch(batch, sig_.batch, scratch);
    // A model on a device: its outputs come back in one copy.
    const Tensor y =
        snapshot->replicas[replica]->Forward(mb.x, /*training=*/false).To(Device::kCpu);
    results = ComputeResults(sig_, mb.x, y);
  } catch (const std::exception& e) {
    error = e.what();
    SF_LOG(Warn) << "batch of " << rows << " instances failed: " << error;
  }
  const bool classify = sig_.task == apps::Task::kClassify;
  const int64_t width = classify ? sig_.output_width : 1;
  int64_t begin = 0;
  for (const auto& job : jobs) {
    JobResult r;
    r.version = snapshot->version;
    r.batch_rows = rows;
    r.error = error;
    const int64_t n = job->num_rows();
    if (error.empty()) {
      if (classify) {
        r.results.classes.assign(results.classes.begin() + begin,
                                 results.classes.begin() + begin + n);
      }
      r.results.values.assign(results.values.begin() + begin * width,
                              results.values.begin() + (begin + n) * width);
    }
    begin += n;
    job->done.set_value(std::move(r));
  }
}

}  // namespace shardflow::serve
