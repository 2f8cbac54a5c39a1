#include "apps/train/strategy.hpp"

#include <algorithm>
#include <map>
#include <mutex>

#include "apps/train/data_parallel.hpp"
#include "apps/train/model_parallel.hpp"
#include "apps/train/parameter_server.hpp"
#include "comm/collectives.hpp"
#include "comm/device_allreduce.hpp"
#include "core/error.hpp"
#include "core/loss.hpp"
#include "core/metrics.hpp"

namespace shardflow::train {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StrategyFactory> factories;  // guarded by mu
};

// The built-in strategies are entered here rather than by static registration objects, which a
// static library's linker drops when nothing else references their object file.
Registry& TheRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry;
    r->factories["data_parallel"] = MakeDataParallel;
    r->factories["model_parallel"] = MakeModelParallel;
    r->factories["parameter_server"] = MakeParameterServer;
    return r;
  }();
  return *registry;
}

}  // namespace

void EvalSums::Add(Task task, const Tensor& y, const Tensor& labels, const Tensor& x) {
  const int64_t rows = y.num_elements() > 0 ? y.dim(0) : 0;
  if (task == Task::kClassify) {
    sums[0] += SoftmaxCrossEntropy<float>(y, labels, nullptr) * static_cast<double>(rows);
    sums[1] += static_cast<double>(CountCorrect<float>(y, labels));
  } else {
    sums[0] += SumReconstructionError<float>(y, x);
  }
  sums[2] += static_cast<double>(rows);
}

EvalResult EvalSums::Reduce(comm::Communicator& comm) {
  comm::AllreduceDoubles(comm, sums, 3, comm::ReduceOp::kSum);
  EvalResult r;
  r.samples = static_cast<int64_t>(sums[2]);
  if (r.samples > 0) {
    r.loss = sums[0] / sums[2];
    r.accuracy = sums[1] / sums[2];
  }
  return r;
}

void RegisterStrategy(const std::string& name, StrategyFactory factory) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[name] = std::move(factory);
}

std::vector<std::string> StrategyNames() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

std::unique_ptr<Strategy> MakeStrategy(const std::string& name, const StrategyEnv& env) {
  StrategyFactory factory;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const std::string& n : StrategyNames()) known += (known.empty() ? "" : ", ") + n;
    throw Error(ErrorCode::kInvalidArgument, "unknown training strategy '" + name + "'",
                {.key = "dist.strategy", .hint = "known strategies: " + known});
  }
  return factory(env);
}

bool UseDeviceAllreduce(const TrainerOptions& options, bool on_device) {
  const std::string& want = options.device_allreduce;
  if (!on_device) {
    if (want != "nccl") return false;
    throw Error(ErrorCode::kInvalidArgument,
                "dist.device_allreduce = nccl reduces gradients on GPUs, but the model is on the "
                "CPU",
                {.key = "dist.device_allreduce", .hint = "train.device = cuda, or leave it auto"});
  }
  if (want == "host") return false;
  if (comm::RegisteredDeviceAllreduce() != nullptr) return true;
  if (want == "auto") return false;
  throw Error(ErrorCode::kInvalidArgument,
              "dist.device_allreduce = nccl, but this program has no device all-reduce",
              {.key = "dist.device_allreduce",
               .hint = "run shardflow-train-cuda (built with NCCL), or dist.device_allreduce = "
                       "host"});
}

}  // namespace shardflow::train
