// SF_HOST_DEVICE marks a function that both the host compiler and nvcc compile: __host__
// __device__ under nvcc, nothing for the host compiler. Per-element math and the index kernels
// of core/backend/kernels use it so that a CUDA kernel and its CPU twin run the same code.
#pragma once

#if defined(__CUDACC__)
#define SF_HOST_DEVICE __host__ __device__
#else
#define SF_HOST_DEVICE
#endif
