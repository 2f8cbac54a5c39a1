// The CUDA compute backend: shardflow::Backend on one GPU, as KernelBackend (the index kernels
// of core/backend/kernels, shared with the host twin) run by DeviceExec (grid-stride launches,
// cuBLAS GEMM, stream-ordered scratch). InstallCudaBackend registers the device's runtime
// (core/backend/device_runtime.hpp): both backends, the tensor memory (the same pool) and the
// input staging (cuda_staging.hpp), with the program's collectives (comm/nccl), as Device::kCuda.
// Only what is GPU-only lives here; tests/core/host_twin_test.cpp covers the kernels on every
// machine, tests/cuda (label gpu) runs them on a GPU.
// Thread-safety: install once at start-up; then as Backend (one kernel call at a time per
// thread; the backend's stream orders them).
#pragma once

#include <cstddef>
#include <memory>

#include "core/backend/backend.hpp"
#include "core/backend/device_runtime.hpp"

namespace shardflow::cuda {

// Makes device `ordinal` current and registers the CUDA backend's runtime for it as
// Device::kCuda's, with `collectives` (comm/nccl/nccl_allreduce.hpp: NCCL; null: none). Throws
// Error(kInternal) naming the device and CUDA's message when it cannot (no GPU, a bad ordinal).
void InstallCudaBackend(int ordinal,
                        std::shared_ptr<const DeviceCollectives> collectives = nullptr);

// Makes the installed backend's device current on the calling thread (CUDA's current device is
// per thread): a thread other than the one that installed the backend calls it before its
// first kernel call or device allocation. Throws Error(kInternal) when none is installed.
void UseOnThisThread();

// Device memory for tests and transfers, on the installed backend's stream. Copies synchronise.
void* DeviceAllocate(size_t bytes);
void DeviceFree(void* p);
void CopyHostToDevice(void* dst, const void* src, size_t bytes);
void CopyDeviceToHost(void* dst, const void* src, size_t bytes);
// Peak bytes of the backend's memory pool since install.
size_t PeakDeviceBytes();
// TF32 for float GEMMs (default off).
void SetTf32(bool on);

}  // namespace shardflow::cuda
