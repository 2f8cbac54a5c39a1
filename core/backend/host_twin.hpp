// The host twin of the CUDA backend: KernelBackend (core/backend/kernel_backend.hpp) run by
// HostExec, a plain loop over each kernel's index space on the calling thread, with host memory
// for scratch and the index-kernel GEMM. It computes what the CUDA backend computes, op by op
// and kernel by kernel, on a machine without a GPU, so every CI run checks the CUDA backend's
// kernels (decomposition, indexing, arithmetic) against the CPU backend and can train whole
// models through them (tests/core/host_twin_test.cpp). It is a test and reference device, not
// a fast one: one thread, no blocking. device() is Device::kCpu (it reads host memory).
// Thread-safety: stateless; any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

#include "core/backend/backend.hpp"
#include "core/backend/device_runtime.hpp"
#include "core/backend/kernels/elementwise.hpp"

namespace shardflow {

class HostExec {
 public:
  template <typename K>
  void Run(int64_t n, const K& k) {
    for (int64_t i = 0; i < n; ++i) k(i);
  }
  template <typename T>
  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
            int64_t lda, const T* b, int64_t ldb, T beta, T* c, int64_t ldc) {
    Run(m * n, kernels::GemmK<T>{trans_a, trans_b, n, k, alpha, a, lda, b, ldb, beta, c, ldc});
  }
  void* Allocate(size_t bytes) {
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }
  void Release(void* p) { std::free(p); }
  void CopyToHost(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
  Device device() const { return Device::kCpu; }
};

// The process-wide host twin for T (float or double).
template <typename T>
Backend<T>& HostTwinBackend();

// A simulated CUDA device: while alive, Device::kCuda's runtime (core/backend/device_runtime.hpp)
// has the host twin as its backends and host memory (malloc) as its memory, with the synchronous
// default staging. Tensors on it are flagged cuda, so host code that reads one through data<T>()
// fails as it would on a GPU, and every kernel runs through the CUDA backend's index kernels: a
// whole model can run the GPU code path on a machine without a GPU. `collectives` (a program's,
// comm/device_allreduce.hpp: comm/'s all-reduce in place standing in for NCCL) go into the same
// runtime; null: none. Removes Device::kCuda's runtime at exit. For tests and the simulated
// device of the programs (SHARDFLOW_SIMULATE_CUDA=1); not with a real CUDA backend installed.
class SimulatedCudaDevice {
 public:
  explicit SimulatedCudaDevice(std::shared_ptr<const DeviceCollectives> collectives = nullptr);
  ~SimulatedCudaDevice();
  SimulatedCudaDevice(const SimulatedCudaDevice&) = delete;
  SimulatedCudaDevice& operator=(const SimulatedCudaDevice&) = delete;
};

}  // namespace shardflow
