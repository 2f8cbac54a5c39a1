// What every oneDNN call of the CPU backend shares (core/cpu/onednn_conv.cpp,
// core/precision/bf16/cpu_bf16_gemm.cpp): the one CPU engine, and per thread a stream, scratch
// memory, bf16 copies of inputs and one OpenMP thread for oneDNN: the calls' pieces run on
// shardflow's intra-op pool and are the parallelism (an OpenMP team inside each would oversubscribe
// the cores). Only for files built with oneDNN (SHARDFLOW_HAVE_ONEDNN). Thread-safety: the engine
// from any thread; a OneDnnThread on its own thread only.
#pragma once

#include <omp.h>

#include <cstdint>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

namespace shardflow::cpu {

inline dnnl::engine& OneDnnEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

struct OneDnnThread {
  std::unique_ptr<dnnl::stream> stream;
  std::vector<uint8_t> bytes;
  dnnl::stream& Stream() {
    if (!stream) {
      omp_set_num_threads(1);
      stream = std::make_unique<dnnl::stream>(OneDnnEngine());
    }
    return *stream;
  }
  // A scratchpad of n bytes starting at a page boundary. oneDNN allocates its own scratchpads
  // page-aligned and carves them from an aligned start without counting the slack an unaligned
  // one needs: given std::vector's 16-byte start, the AVX2 kernel of a 1x1 strided convolution
  // wrote 16 bytes past the declared size (valgrind, AVX2-only CPUs; 64-byte starts still did).
  uint8_t* Bytes(size_t n) {
    if (bytes.size() < n + kScratchAlign) bytes.resize(n + kScratchAlign);
    const auto at = reinterpret_cast<uintptr_t>(bytes.data());
    return bytes.data() + (kScratchAlign - at % kScratchAlign) % kScratchAlign;
  }
  static constexpr size_t kScratchAlign = 4096;
  // Inputs rounded to bf16 for a bf16 primitive (two at most: x and dy).
  std::vector<uint16_t> halves[2];
  uint16_t* Halves(int slot, size_t n) {
    if (halves[slot].size() < n) halves[slot].resize(n);
    return halves[slot].data();
  }
};

// The calling thread's.
inline OneDnnThread& ThisOneDnnThread() {
  thread_local OneDnnThread t;
  return t;
}

}  // namespace shardflow::cpu
