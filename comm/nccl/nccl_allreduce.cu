#include "comm/nccl/nccl_allreduce.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "comm/collectives.hpp"
#include "comm/device_allreduce.hpp"
#include "core/cuda/check_cuda.hpp"
#include "core/cuda/device_exec.cuh"
#include "core/error.hpp"

namespace shardflow::comm {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// What rank 0 broadcasts: whether it made an id, the id, and its error when not.
struct Bootstrap {
  int ok = 0;
  ncclUniqueId id{};
  char error[256] = {};
};

class NcclAllreduce final : public DeviceAllreduce {
 public:
  NcclAllreduce(Communicator& comm, const DeviceAllreduceOptions& options, cuda::DeviceExec& exec)
      : exec_(exec), watchdog_s_(options.watchdog_seconds), rank_(comm.rank()) {
    Bootstrap b;
    if (comm.rank() == 0) {
      const ncclResult_t rc = ncclGetUniqueId(&b.id);
      b.ok = rc == ncclSuccess ? 1 : 0;
      if (!b.ok) std::strncpy(b.error, ncclGetErrorString(rc), sizeof(b.error) - 1);
    }
    BroadcastBytes(comm, &b, sizeof(b), 0);
    if (!b.ok) {
      throw Error(ErrorCode::kCommunication,
                  std::string("NCCL bootstrap: rank 0 could not make a unique id: ") + b.error,
                  {.rank = rank_});
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    const Clock::time_point t0 = Clock::now();
    Polled(ncclCommInitRankConfig(&nccl_, comm.size(), b.id, comm.rank(), &config),
           "ncclCommInitRankConfig", t0);
    SF_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    SF_CHECK_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    SF_CHECK_CUDA(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }

  ~NcclAllreduce() override {
    if (nccl_ != nullptr) {
      // Finalizing completes only when every rank's communicator is quiescent: while an error
      // unwinds (a peer may be gone) or with a reduction unfinished, abort instead. A finalize
      // that fails or does not finish within the watchdog aborts too; only a finalized
      // communicator is destroyed.
      bool finalized = false;
      if (!pending_ && std::uncaught_exceptions() == 0) {
        ncclResult_t rc = ncclCommFinalize(nccl_);
        const Clock::time_point t0 = Clock::now();
        while (rc == ncclInProgress && Since(t0) < watchdog_s_) {
          std::this_thread::sleep_for(std::chrono::microseconds(20));
          if (ncclCommGetAsyncError(nccl_, &rc) != ncclSuccess) break;
        }
        finalized = rc == ncclSuccess;
      }
      if (finalized) {
        ncclCommDestroy(nccl_);
      } else {
        ncclCommAbort(nccl_);
      }
    }
    if (done_ != nullptr) cudaEventDestroy(done_);
    if (ready_ != nullptr) cudaEventDestroy(ready_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "nccl"; }

  void Start(float* data, size_t count) override {
    if (count == 0) return;
    SF_CHECK_CUDA(cudaEventRecord(ready_, exec_.stream()));
    SF_CHECK_CUDA(cudaStreamWaitEvent(stream_, ready_, 0));
    pending_ = true;
    Polled(ncclAllReduce(data, data, count, ncclFloat, ncclAvg, nccl_, stream_), "ncclAllReduce",
           Clock::now());
  }

  double Finish() override {
    if (!pending_) return 0.0;
    const Clock::time_point t0 = Clock::now();
    SF_CHECK_CUDA(cudaEventRecord(done_, stream_));
    SF_CHECK_CUDA(cudaStreamWaitEvent(exec_.stream(), done_, 0));
    for (;;) {
      const cudaError_t rc = cudaEventQuery(done_);
      if (rc == cudaSuccess) break;
      if (rc != cudaErrorNotReady) SF_CHECK_CUDA(rc);
      CheckAsync("the gradient all-reduce", t0);
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    pending_ = false;
    return Since(t0);
  }

 private:
  // A non-blocking NCCL call: returns when it is done, or aborts the communicator and throws
  // when it fails or the watchdog expires.
  void Polled(ncclResult_t rc, const char* call, Clock::time_point t0) {
    while (rc == ncclInProgress) {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      if (Since(t0) > watchdog_s_) Abort(call, "did not finish", t0);
      SF_CHECK_NCCL(ncclCommGetAsyncError(nccl_, &rc));
    }
    if (rc != ncclSuccess) Abort(call, ncclGetErrorString(rc), t0);
  }

  void CheckAsync(const char* what, Clock::time_point t0) {
    ncclResult_t async = ncclSuccess;
    SF_CHECK_NCCL(ncclCommGetAsyncError(nccl_, &async));
    if (async != ncclSuccess && async != ncclInProgress) Abort(what, ncclGetErrorString(async), t0);
    if (Since(t0) > watchdog_s_) Abort(what, "did not finish", t0);
  }

  [[noreturn]] void Abort(const char* what, const std::string& why, Clock::time_point t0) {
    if (nccl_ != nullptr) ncclCommAbort(nccl_);
    nccl_ = nullptr;
    throw Error(ErrorCode::kCommunication,
                std::string("NCCL: ") + what + " " + why + " after " + std::to_string(Since(t0)) +
                    " s (watchdog " + std::to_string(watchdog_s_) + " s); communicator aborted",
                {.rank = rank_,
                 .hint = "a peer rank died or hangs: see its log; dist.device_allreduce = host "
                         "stages gradients through comm/ instead"});
  }

  cuda::DeviceExec& exec_;
  double watchdog_s_;
  int rank_;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
  bool pending_ = false;  // reductions started and not finished
};

}  // namespace

std::shared_ptr<const DeviceCollectives> NcclCollectives() {
  return MakeDeviceCollectives([](Communicator& comm, const DeviceAllreduceOptions& options) {
    return std::unique_ptr<DeviceAllreduce>(
        std::make_unique<NcclAllreduce>(comm, options, cuda::InstalledExec()));
  });
}

}  // namespace shardflow::comm
