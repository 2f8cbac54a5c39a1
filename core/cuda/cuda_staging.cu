// The CUDA backend's input staging (core/device_staging.hpp): pinned host memory
// (cudaHostAlloc), host-to-device copies on a copy stream of their own, and per slot the events
// that order them against the compute stream: a copy waits for the compute that last read the
// slot (released), the compute waits for the copy (copied). The waits are device-side; the host
// waits only in WaitCopied, before it rewrites a slot's pinned buffers.
// Timing, per step, with timed events on the compute stream: "wait begin" and "wait end"
// around the compute's wait for the copies (the stall) and "released" after the step's work
// (active = wait end -> released). A slot's pair is read when the slot is next acquired, two
// steps later, by when it has long completed; TakeTimes reads the rest.
#include "core/cuda/cuda_staging.hpp"

#include <cuda_runtime.h>

#include <array>

#include "core/cuda/check_cuda.hpp"
#include "core/cuda/device_exec.cuh"
#include "core/device_staging.hpp"
#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::cuda {
namespace {

class CudaStaging final : public DeviceStaging {
 public:
  explicit CudaStaging(DeviceExec& exec) : exec_(exec) {
    SF_CHECK_CUDA(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    for (Slot& s : slots_) {
      SF_CHECK_CUDA(cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming));
      SF_CHECK_CUDA(cudaEventCreateWithFlags(&s.released, cudaEventDisableTiming));
      SF_CHECK_CUDA(cudaEventCreate(&s.wait_begin));
      SF_CHECK_CUDA(cudaEventCreate(&s.wait_end));
      SF_CHECK_CUDA(cudaEventCreate(&s.done));
    }
  }
  // Lives until exit with the backend; the driver reclaims streams and events then.

  void* AllocatePinned(size_t bytes) override {
    void* p = nullptr;
    SF_CHECK_CUDA(cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault));
    return p;
  }
  void FreePinned(void* p) noexcept override {
    if (p == nullptr) return;
    const cudaError_t rc = cudaFreeHost(p);
    if (rc != cudaSuccess) {
      SF_LOG(Warn) << "cudaFreeHost failed: " << cudaGetErrorString(rc);
      cudaGetLastError();
    }
  }

  void Copy(int slot, void* dst, const void* src, size_t bytes) override {
    Slot& s = At(slot);
    if (bytes == 0) return;
    if (s.released_recorded) SF_CHECK_CUDA(cudaStreamWaitEvent(copy_, s.released, 0));
    SF_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, copy_));
    SF_CHECK_CUDA(cudaEventRecord(s.copied, copy_));
    s.copied_recorded = true;
  }

  void Acquire(int slot) override {
    Slot& s = At(slot);
    Measure(s);
    SF_CHECK_CUDA(cudaEventRecord(s.wait_begin, exec_.stream()));
    if (s.copied_recorded) SF_CHECK_CUDA(cudaStreamWaitEvent(exec_.stream(), s.copied, 0));
    SF_CHECK_CUDA(cudaEventRecord(s.wait_end, exec_.stream()));
    s.acquired = true;
  }

  void Release(int slot) override {
    Slot& s = At(slot);
    SF_CHECK_CUDA(cudaEventRecord(s.released, exec_.stream()));
    s.released_recorded = true;
    if (s.acquired) {
      SF_CHECK_CUDA(cudaEventRecord(s.done, exec_.stream()));
      s.acquired = false;
      s.pending = true;
    }
  }

  void WaitCopied(int slot) override {
    Slot& s = At(slot);
    if (s.copied_recorded) SF_CHECK_CUDA(cudaEventSynchronize(s.copied));
  }

  StagingTimes TakeTimes() override {
    for (Slot& s : slots_) Measure(s);
    StagingTimes t = times_;
    t.measured = true;
    times_ = {};
    return t;
  }

 private:
  struct Slot {
    cudaEvent_t copied = nullptr, released = nullptr;
    cudaEvent_t wait_begin = nullptr, wait_end = nullptr, done = nullptr;
    bool copied_recorded = false, released_recorded = false;
    bool acquired = false, pending = false;  // a step's timed events recorded, not yet read
  };

  Slot& At(int slot) {
    if (slot < 0 || slot >= kMaxSlots) {
      throw Error(ErrorCode::kInternal, "staging slot " + std::to_string(slot) + " out of range");
    }
    return slots_[static_cast<size_t>(slot)];
  }

  // Adds a finished step's stall and active time (waiting for it if needed).
  void Measure(Slot& s) {
    if (!s.pending) return;
    SF_CHECK_CUDA(cudaEventSynchronize(s.done));
    float stall_ms = 0, active_ms = 0;
    SF_CHECK_CUDA(cudaEventElapsedTime(&stall_ms, s.wait_begin, s.wait_end));
    SF_CHECK_CUDA(cudaEventElapsedTime(&active_ms, s.wait_end, s.done));
    times_.compute_stall_s += 1e-3 * stall_ms;
    times_.compute_active_s += 1e-3 * active_ms;
    ++times_.steps;
    s.pending = false;
  }

  DeviceExec& exec_;
  cudaStream_t copy_ = nullptr;
  std::array<Slot, kMaxSlots> slots_{};
  StagingTimes times_;
};

}  // namespace

DeviceStaging& CudaInputStaging(DeviceExec& exec) {
  static auto* staging = new CudaStaging(exec);  // lives until exit
  return *staging;
}

}  // namespace shardflow::cuda
