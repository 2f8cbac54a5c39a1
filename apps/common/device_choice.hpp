// Which device a rank computes on: [train] device = cpu | cuda | auto, for shardflow-train,
// shardflow-predict and shardflow-serve (they share the training config's sections).
//
// Every rank decides alone, in the parse phase, from what it sees (a DeviceProbe). No
// collective runs in the parse phase: RunMain (core/mpi_env.hpp) agrees on the outcome with
// one all-reduce afterwards, so a rank that finds no GPU ends the job with its own line, exit 2,
// and no rank waits in a collective for it.
//
// The rule (docs/design.md, decision 47):
//   cpu   the CPU; nothing is probed.
//   cuda  GPU `ordinal` of the visible devices: 0 when CUDA_VISIBLE_DEVICES names exactly one
//         device (slurm/launch.sh gives each rank its own GPU that way), else the local rank
//         (one rank per GPU of the node). No usable GPU, or a local rank past the visible count,
//         is Error(kInvalidArgument) whose one line names the rank, the host and what it saw.
//   auto  cuda when a usable GPU is visible, else cpu.
// A GPU is usable only by a program that carries the CUDA backend (shardflow-train-cuda,
// shardflow-predict-cuda, shardflow-serve-cuda: request.has_backend); the simulated device
// (SHARDFLOW_SIMULATE_CUDA=1) by every program.
// Elsewhere `cuda` stops with Error(kInvalidArgument) naming the program to run, and `auto`
// falls back to the CPU with a warning. Nothing here claims that a GPU did the work.
// Thread-safety: pure functions, except ProbeDevices and SelectDevice (main thread, parse phase).
#pragma once

#include <string>

#include "core/tensor.hpp"

namespace shardflow::apps {

// What one process sees of the GPUs.
struct DeviceProbe {
  int device_count = 0;  // usable devices (after CUDA_VISIBLE_DEVICES)
  // Why device_count is 0, e.g. "cudaGetDeviceCount: no CUDA-capable device is detected".
  std::string error;
  std::string cuda_visible_devices = "(unset)";  // the variable's value, or "(unset)"
  // SHARDFLOW_SIMULATE_CUDA=1: one simulated device (the CUDA backend's host twin on the CPU,
  // core/backend/host_twin.hpp), which every program can run on; for tests, never a GPU.
  bool simulated = false;
};

struct DeviceRequest {
  std::string device = "cpu";  // the key's value: cpu | cuda | auto
  std::string key = "train.device";
  std::string work = "training";  // what would run on the GPU: training | predicting | serving
  int rank = 0;                   // world rank
  int local_rank = 0;             // rank among the processes of this node
  // Parameter servers: local_rank counts the node's workers only (servers take no GPU).
  bool servers_take_no_gpu = false;
  std::string host;
  // The program carries the CUDA backend (shardflow-*-cuda); the others would only load
  // CUDA's libraries for it, so they refuse a real GPU and say which program to run.
  bool has_backend = false;
};

struct DeviceChoice {
  Device device = Device::kCpu;
  int ordinal = -1;   // the GPU among the visible devices; -1 on the CPU
  bool warn = false;  // `note` is a warning (auto saw a GPU it cannot use yet)
  std::string note;   // one line: what was chosen and why
};

// The GPU this rank takes among the visible ones, for request.device = cuda: 0 when
// CUDA_VISIBLE_DEVICES names exactly one device, else the local rank. Throws
// Error(kInvalidArgument), key request.key, one line naming the rank and host: no usable GPU
// (with what the probe saw), or a local rank past the visible count (with both numbers).
int GpuOrdinal(const DeviceRequest& request, const DeviceProbe& probe);

// The device for `request` given `probe` (ignored for cpu). Throws Error(kInvalidArgument),
// key request.key: an unknown value (naming the allowed ones), cuda without a usable GPU,
// cuda with a local rank past the visible devices, and cuda with a GPU (not available yet).
DeviceChoice ChooseDevice(const DeviceRequest& request, const DeviceProbe& probe);

// The text of an unset CUDA_VISIBLE_DEVICES, and how a value is shown ("" as "\"\"").
std::string VisibleDevicesText(const char* value);

// What this process sees: SHARDFLOW_SIMULATE_CUDA=1 gives one simulated device; else, in a
// build with CUDA, cudaGetDeviceCount (the shared runtime alone, which loads on a machine without
// a GPU); in one without, count 0 and "this build has no CUDA backend (...)". Defined in
// device_probe.cpp, of the library shardflow_device_probe, the only app code that links CUDA.
DeviceProbe ProbeDevices();

// This machine's host name ("localhost" when it cannot be read).
std::string HostName();

// The parse phase's call: ChooseDevice with ProbeDevices() (not probed for cpu), then rank 0
// logs the choice's note once (a warning when it is one). Throws as ChooseDevice.
DeviceChoice SelectDevice(DeviceRequest request);

}  // namespace shardflow::apps
