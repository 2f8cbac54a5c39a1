// TensorSum: the all-reduce (sum) that tensor-parallel layers ask of a stage's ways
// (core/layers/tensor_parallel.hpp: TensorParallel::sum_float), for a model on any device.
// The layers pass pointers on their model's device; comm/ reduces host memory, so a device's
// values are summed in a host copy and copied back (core/host_staging.hpp; MPI need not be
// CUDA-aware). Used by shardflow-train's model-parallel strategy and by shardflow-predict on a
// grid.
// Thread-safety: one thread per instance (the model's).
#pragma once

#include <cstdint>

#include "comm/communicator.hpp"
#include "core/host_staging.hpp"
#include "core/tensor.hpp"

namespace shardflow::apps {

class TensorSum {
 public:
  // `ways`: the stage's tensor ways (kept by reference; it must outlive the calls).
  TensorSum(comm::Communicator& ways, Device device) : ways_(ways), staging_(device) {}
  // x (n values on the device) = the sum of every way's x.
  void operator()(float* x, int64_t n);
  // Seconds spent in the calls so far.
  double seconds() const { return seconds_; }

 private:
  comm::Communicator& ways_;
  HostStaging staging_;  // a device's values while they are summed
  double seconds_ = 0;
};

}  // namespace shardflow::apps
