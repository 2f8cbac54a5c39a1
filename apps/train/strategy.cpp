#include "apps/train/strategy.hpp"

#include <cmath>

#include "apps/train/strategy_unit.hpp"
#include "comm/collectives.hpp"
#include "comm/device_allreduce.hpp"
#include "core/backend/device_runtime.hpp"
#include "core/error.hpp"
#include "core/loss.hpp"
#include "core/metrics.hpp"

namespace shardflow::train {

void EvalSums::Add(Task task, const Tensor& y, const Tensor& labels, const Tensor& x) {
  const int64_t rows = y.num_elements() > 0 ? y.dim(0) : 0;
  if (task == Task::kClassify) {
    sums[0] += SoftmaxCrossEntropy<float>(y, labels, nullptr) * static_cast<double>(rows);
    sums[1] += CorrectPerSample<float>(y, labels);
    if (y.rank() == 2 && y.dim(1) == 2 && labels.num_elements() == rows) {
      sums[3] += 1;
      const float* p = y.data<float>();
      for (int64_t r = 0; r < rows; ++r) {
        scores.push_back(static_cast<double>(p[2 * r + 1]) - static_cast<double>(p[2 * r]));
        positive.push_back(LabelAt(labels, r) == 1 ? 1 : 0);
      }
    }
  } else {
    sums[0] += SumReconstructionError<float>(y, x);
  }
  sums[2] += static_cast<double>(rows);
}

EvalResult EvalSums::Reduce(comm::Communicator& comm) {
  comm::AllreduceDoubles(comm, sums, 4, comm::ReduceOp::kSum);
  EvalResult r;
  r.samples = static_cast<int64_t>(sums[2]);
  if (r.samples > 0) {
    r.loss = sums[0] / sums[2];
    r.accuracy = sums[1] / sums[2];
  }
  if (sums[3] > 0) {  // every rank agrees: a binary classifier somewhere
    std::vector<double> all_scores = comm::GatherConcat(comm, scores.data(), scores.size());
    std::vector<uint8_t> all_positive = comm::GatherConcat(comm, positive.data(), positive.size());
    double auc = comm.rank() == 0 ? ExactAuc(all_scores, all_positive) : 0.0;
    double parts[2] = {std::isnan(auc) ? 0.0 : auc, std::isnan(auc) ? 1.0 : 0.0};
    comm::AllreduceDoubles(comm, parts, 2, comm::ReduceOp::kSum);  // rank 0's, to every rank
    r.auc = parts[1] > 0 ? std::nan("") : parts[0];
  }
  return r;
}

std::unique_ptr<Strategy> MakeStrategy(const std::string& name, const StrategyEnv& env) {
  return FindStrategyUnit(name).make(env);
}

bool UseDeviceAllreduce(const TrainerOptions& options, Device device) {
  const std::string& want = options.device_allreduce;
  if (DeviceSupports(device, DeviceFeature::kHostMemory)) {
    if (want != "nccl") return false;
    throw Error(ErrorCode::kInvalidArgument,
                "dist.device_allreduce = nccl reduces gradients on GPUs, but the model is on the "
                "CPU",
                {.key = "dist.device_allreduce", .hint = "train.device = cuda, or leave it auto"});
  }
  if (want == "host") return false;
  if (comm::DeviceAllreduceFor(device) != nullptr) return true;
  if (want == "auto") return false;
  throw Error(ErrorCode::kInvalidArgument,
              "dist.device_allreduce = nccl, but this program has no device all-reduce",
              {.key = "dist.device_allreduce",
               .hint = "run shardflow-train-cuda (built with NCCL), or dist.device_allreduce = "
                       "host"});
}

}  // namespace shardflow::train
