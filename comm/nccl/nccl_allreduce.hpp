// NCCL all-reduce of device gradients (comm/device_allreduce.hpp) for the CUDA backend
// (core/cuda); the library shardflow_nccl, built with it.
//
// Bootstrap: over comm/'s collectives: rank 0 makes the NCCL unique id and broadcasts it with
// its status, so a rank 0 that cannot make one stops every rank with its message instead of
// leaving them waiting. The communicator is non-blocking, so initialisation and every call are
// polled under the watchdog: a peer that never joins or a reduction that never ends aborts the
// communicator (ncclCommAbort) and throws Error(kCommunication) naming the rank and the time.
// Reductions: ncclAllReduce with ncclAvg on a communication stream of its own, ordered after
// the compute stream's work by an event, so a bucket is reduced while backprop computes the
// next ones; Finish makes the compute stream wait for the last one and returns when it is done.
// GPU-only: tests/cuda/nccl_allreduce_gpu_test.cpp (label gpu) compares it with comm/'s
// all-reduce. Without a GPU, the strategy's use of the seam is tested through the simulated
// device's stand-in (comm/device_allreduce.hpp; tests/train/device_runs.sh simulated).
// Thread-safety: one training thread; the device must be the installed backend's.
#pragma once

#include <memory>

#include "comm/device_allreduce.hpp"

namespace shardflow::comm {

// NCCL as a device runtime's collectives (comm/device_allreduce.hpp), for
// cuda::InstallCudaBackend(ordinal, NcclCollectives()): each all-reduce it makes runs on the
// installed CUDA backend's device and stream. REQUIRES (when one is made): the backend is
// installed.
std::shared_ptr<const DeviceCollectives> NcclCollectives();

}  // namespace shardflow::comm
