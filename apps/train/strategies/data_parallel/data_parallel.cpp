#include "apps/train/strategies/data_parallel/data_parallel.hpp"

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "comm/allreduce_shm.hpp"
#include "comm/device_allreduce.hpp"
#include "comm/gradient_reducer.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "core/host_staging.hpp"
#include "core/logging.hpp"

namespace shardflow::train {
namespace {

class DataParallelStrategy final : public ReplicaStrategy {
 public:
  explicit DataParallelStrategy(const StrategyEnv& env) : ReplicaStrategy(env) {}
  std::string name() const override { return "data_parallel"; }
  CommProfile comm_profile() const override { return profile_; }

 protected:
  void AttachToModel() override;
  void BeforeForward(const StepInput& in) override { step_ = in.step; }
  void BeginBackward() override {
    if (tracker_) tracker_->Reset();
  }
  double FinishGradients() override;

 private:
  // Gradients in a shared-memory window when every rank is on one node and the all-reduce
  // allows it; null otherwise.
  void PlaceGradients();
  void LogGradientPath(const std::vector<GradBucket>& buckets) const;
  // A model on a device: the hooks that reduce its gradients where they are
  // (comm/device_allreduce.hpp, dist.device_allreduce).
  void AttachDeviceAllreduce(const std::vector<GradBucket>& buckets);
  double FinishOnDevice();

  std::unique_ptr<comm::Communicator> grad_comm_;  // the reducer thread's own
  std::unique_ptr<comm::SharedFloatBuffer> shared_grads_;
  std::unique_ptr<comm::GradientReducer> reducer_;
  std::unique_ptr<GradReadyTracker> tracker_;
  // A model on a device reduces its gradients there (NCCL) when the program has a device
  // all-reduce: each bucket starts as backprop finishes it, in place; buckets not started by
  // then start at FinishGradients, in index order.
  std::unique_ptr<comm::DeviceAllreduce> device_reduce_;
  std::vector<GradBucket> buckets_;
  CommProfile profile_;        // the buckets' count and size, for the report's advice
  std::vector<bool> started_;  // this step's, by bucket index
  // Otherwise (dist.device_allreduce = host, or no NCCL) it reduces them in host memory
  // (`reduced_`): on the CPU that is the arena's gradients themselves (or the shared window that
  // backs them); a device model's buckets are staged into it (the shared window, or the
  // staging's own buffer) as backprop finishes them, and the reduced whole is copied back before
  // the update (HostStaging, a pass-through on the CPU). On one rank with the model on a device
  // there is no reducer at all.
  HostStaging staging_;
  float* reduced_ = nullptr;
  int64_t step_ = 0;  // the step being trained (the fault hook's)
};

void DataParallelStrategy::AttachToModel() {
  const TrainerOptions& o = options();
  comm::CommunicatorOptions comm_options;
  comm_options.watchdog = comm::WatchdogOptions{.timeout_seconds = o.watchdog_seconds};
  grad_comm_ = std::make_unique<comm::Communicator>(job().raw(), comm_options);
  Arena<float>& arena = model().arena();
  const std::vector<GradBucket> buckets =
      arena.Buckets(static_cast<size_t>(std::max(1.0, o.bucket_mb * (1 << 20))));
  std::vector<comm::GradientSlice> slices;
  for (const GradBucket& b : buckets) {
    slices.push_back({b.offset, b.size});
    profile_.largest_bucket_mb =
        std::max(profile_.largest_bucket_mb, static_cast<double>(b.size) * 4 / (1 << 20));
  }
  profile_.buckets = grad_comm_->size() > 1 ? static_cast<int>(buckets.size()) : 0;
  staging_ = HostStaging(arena.device());
  // One rank with its model on a device: nothing to reduce, and the gradients stay where
  // backprop wrote them (no reducer, no host copy of the arena).
  if (!staging_.pass_through() && grad_comm_->size() == 1) return;
  if (UseDeviceAllreduce(o, arena.device())) {
    AttachDeviceAllreduce(buckets);
    return;
  }
  PlaceGradients();
  reduced_ = staging_.HostSpace(arena.device_grads(), static_cast<size_t>(arena.size()),
                                shared_grads_ ? shared_grads_->data() : nullptr);
  float* reduced = reduced_;
  reducer_ = std::make_unique<comm::GradientReducer>(
      *grad_comm_, reduced, slices,
      comm::ReducerOptions{
          .allreduce = o.allreduce, .overlap = o.overlap, .shared = shared_grads_.get()});
  LogGradientPath(buckets);
  // The reducer starts each gradient bucket as soon as backprop has finished it.
  tracker_ = std::make_unique<GradReadyTracker>(
      buckets,
      [this, reduced](const GradBucket& b) {
        Arena<float>& a = model().arena();
        for (int id : b.params) a.grad(id);  // a gradient still marked zero gets its zeros
        // The bucket starts at its first parameter (not device_grads(): that would write every
        // other marked gradient's zeros now). On the CPU it is reduced + b.offset: no copy.
        if (!b.params.empty()) {
          staging_.ToHost(a.grad(b.params.front()), static_cast<size_t>(b.size),
                          reduced + b.offset);
        }
        reducer_->BucketReady(b.index);
        fault::At(fault::Point::kInAllreduce, {.rank = ctl().rank(), .index = step_});
      },
      arena.specs());
  model().SetGradsReadyHook([this](int layer) { tracker_->LayerDone(layer); });
}

void DataParallelStrategy::AttachDeviceAllreduce(const std::vector<GradBucket>& buckets) {
  const TrainerOptions& o = options();
  device_reduce_ = (*comm::DeviceAllreduceFor(model().arena().device()))(
      *grad_comm_, {.watchdog_seconds = o.watchdog_seconds, .host = o.allreduce});
  buckets_ = buckets;
  started_.assign(buckets.size(), false);
  if (ctl().rank() == 0) {
    SF_LOG(Info) << "gradients: " << model().arena().size() << " floats in " << buckets.size()
                 << " bucket(s), reduced on the device (" << device_reduce_->name() << "), overlap "
                 << (o.overlap ? "on" : "off");
  }
  tracker_ = std::make_unique<GradReadyTracker>(
      buckets,
      [this](const GradBucket& b) {
        if (!options().overlap) return;  // all at FinishGradients
        Arena<float>& a = model().arena();
        for (int id : b.params) a.grad(id);  // a gradient still marked zero gets its zeros
        device_reduce_->Start(a.grad(b.params.front()), static_cast<size_t>(b.size));
        started_[static_cast<size_t>(b.index)] = true;
        fault::At(fault::Point::kInAllreduce, {.rank = ctl().rank(), .index = step_});
      },
      model().arena().specs());
  model().SetGradsReadyHook([this](int layer) { tracker_->LayerDone(layer); });
}

double DataParallelStrategy::FinishOnDevice() {
  Arena<float>& arena = model().arena();
  for (int id = 0; id < arena.num_params(); ++id) arena.grad(id);
  for (const GradBucket& b : buckets_) {
    if (started_[static_cast<size_t>(b.index)] || b.params.empty()) continue;
    device_reduce_->Start(arena.grad(b.params.front()), static_cast<size_t>(b.size));
  }
  started_.assign(buckets_.size(), false);
  return device_reduce_->Finish();
}

double DataParallelStrategy::FinishGradients() {
  if (device_reduce_) return FinishOnDevice();
  if (!reducer_) return 0.0;  // one rank on a device
  Arena<float>& arena = model().arena();
  // Buckets backprop did not mark ready are reduced by Finish from the arena as it is: their
  // gradients still marked zero get their zeros first (the comm thread reads only buckets
  // already ready, whose parameters hold no marks).
  for (int id = 0; id < arena.num_params(); ++id) arena.grad(id);
  const double blocked = reducer_->Finish();
  staging_.ToDevice(arena.device_grads(), reduced_, static_cast<size_t>(arena.size()));
  return blocked;
}

void DataParallelStrategy::PlaceGradients() {
  const comm::AllreduceAlgorithm algorithm = options().allreduce.algorithm;
  if (grad_comm_->size() == 1 || grad_comm_->num_nodes() != 1) return;
  if (algorithm != comm::AllreduceAlgorithm::kAuto && algorithm != comm::AllreduceAlgorithm::kShm)
    return;
  // A node whose shared-memory file system is too small (a container's default /dev/shm)
  // refuses the window, on every rank alike: say so once and keep the gradients private.
  try {
    shared_grads_ = std::make_unique<comm::SharedFloatBuffer>(
        *grad_comm_, static_cast<size_t>(model().arena().size()));
    // Gradients in host memory (the CPU) live in the window; a device model stages into it.
    if (staging_.pass_through()) model().arena().UseGradStorage(shared_grads_->data());
  } catch (const comm::ShmUnavailable& e) {
    if (ctl().rank() == 0) {
      SF_LOG(Warn) << "gradients stay in private memory and are staged for the all-reduce: "
                   << e.what();
    }
  }
}

void DataParallelStrategy::LogGradientPath(const std::vector<GradBucket>& buckets) const {
  const TrainerOptions& o = options();
  if (ctl().rank() != 0 || ctl().size() == 1) return;
  // Buckets hold whole parameters, so one can exceed dist.bucket_mb: the line gives the real
  // largest one and what each bucket travels as.
  std::vector<size_t> bytes;
  int64_t floats = 0;
  for (const GradBucket& b : buckets) {
    bytes.push_back(static_cast<size_t>(b.size) * sizeof(float));
    floats += b.size;
  }
  const size_t largest = bytes.empty() ? 0 : *std::max_element(bytes.begin(), bytes.end());
  std::string path = "in place in shared memory (shm, one node, wire float32";
  path += o.allreduce.wire == comm::WireFormat::kFloat32
              ? ")"
              : std::string("; dist.wire = ") + comm::WireFormatName(o.allreduce.wire) +
                    " applies to ring and to hierarchical across nodes only)";
  if (!shared_grads_) path = comm::DescribeAllreducePath(*grad_comm_, o.allreduce, bytes);
  std::ostringstream mib;
  mib << std::setprecision(3) << static_cast<double>(largest) / (1 << 20);
  SF_LOG(Info) << "gradients: " << floats << " floats in " << buckets.size()
               << " bucket(s), the largest " << mib.str()
               << " MiB (dist.bucket_mb = " << o.bucket_mb
               << ", whole parameters per bucket), overlap " << (o.overlap ? "on" : "off") << ", "
               << grad_comm_->num_nodes() << " node(s); all-reduce " << path;
}

}  // namespace

StrategyUnit DataParallelUnit() {
  StrategyUnit unit;
  unit.name = "data_parallel";
  unit.summary =
      "synchronous; every rank a whole replica of the model on its own shard, gradients "
      "averaged every step by all-reduce";
  unit.yields_to_claims = true;
  unit.replicas = [](const StrategyConfig& c) { return c.job.ranks; };
  unit.plan = [](const TrainerOptions&, const JobShape& job) {
    JobPlan plan;
    plan.shards = job.ranks;
    for (int r = 0; r < job.ranks; ++r) {
      plan.ranks.push_back(
          {.shard = r, .writes_checkpoints = r == 0, .role = "replica " + std::to_string(r)});
    }
    return plan;
  };
  unit.make = [](const StrategyEnv& env) -> std::unique_ptr<Strategy> {
    return std::make_unique<DataParallelStrategy>(env);
  };
  return unit;
}

}  // namespace shardflow::train
