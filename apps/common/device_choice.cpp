#include "apps/common/device_choice.hpp"

#include <unistd.h>

#include "core/error.hpp"

namespace shardflow::apps {
namespace {

// Why the GPU is refused although one is visible; the same words for cuda (an error) and auto
// (a warning), so a user meets one explanation.
std::string NotAvailableYet(const DeviceRequest& r) {
  const std::string program = r.work == "training"     ? "shardflow-train"
                              : r.work == "predicting" ? "shardflow-predict"
                                                       : "shardflow-serve";
  return "this program has no CUDA backend (it would load ~200 MB of CUDA libraries into every "
         "CPU run): run " +
         program + "-cuda, built next to it when nvcc is found";
}

// "rank 1 on node3".
std::string Where(const DeviceRequest& r) {
  return "rank " + std::to_string(r.rank) + " on " + (r.host.empty() ? "?" : r.host);
}

// What the probe saw: "(cudaGetDeviceCount: ...; CUDA_VISIBLE_DEVICES=(unset))" without a
// usable GPU, "2 GPUs (CUDA_VISIBLE_DEVICES=0,1)" with.
std::string Saw(const DeviceProbe& p) {
  const std::string visible = "CUDA_VISIBLE_DEVICES=" + p.cuda_visible_devices;
  if (p.device_count > 0) {
    return std::to_string(p.device_count) + (p.device_count == 1 ? " GPU (" : " GPUs (") + visible +
           ")";
  }
  return "(" + (p.error.empty() ? std::string("no CUDA device") : p.error) + "; " + visible + ")";
}

}  // namespace

std::string VisibleDevicesText(const char* value) {
  if (value == nullptr) return "(unset)";
  if (*value == '\0') return "\"\"";
  return value;
}

int GpuOrdinal(const DeviceRequest& r, const DeviceProbe& p) {
  const std::string setting = r.key + " = " + r.device;
  if (p.device_count <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                Where(r) + ": " + setting + " but no usable GPU " + Saw(p),
                {.key = r.key, .hint = r.key + " = cpu (or auto) runs on the CPU"});
  }
  // The launcher left this rank one GPU (slurm/launch.sh): it is device 0, whatever the rank.
  if (p.cuda_visible_devices != "(unset)" && p.device_count == 1) return 0;
  if (r.local_rank >= p.device_count) {
    throw Error(ErrorCode::kInvalidArgument,
                Where(r) + ": " + setting + ": " +
                    (r.servers_take_no_gpu ? "worker " : "local rank ") +
                    std::to_string(r.local_rank) + (r.servers_take_no_gpu ? " of this node" : "") +
                    " but only " + std::to_string(p.device_count) +
                    (p.device_count == 1 ? " GPU" : " GPUs") +
                    " visible (CUDA_VISIBLE_DEVICES=" + p.cuda_visible_devices + ")",
                {.key = r.key,
                 .hint = r.servers_take_no_gpu
                             ? "run at most one worker per visible GPU on a node (parameter "
                               "servers take none)"
                             : "run at most one rank per visible GPU on a node (slurm/launch.sh "
                               "gives each rank its own)"});
  }
  return r.local_rank;
}

DeviceChoice ChooseDevice(const DeviceRequest& r, const DeviceProbe& p) {
  const std::string setting = r.key + " = " + r.device;
  if (r.device == "cpu") return {.note = "device: cpu (" + setting + ")"};
  if (r.device != "cuda" && r.device != "auto") {
    throw Error(ErrorCode::kInvalidArgument,
                "bad value '" + r.device + "' for " + r.key + ": expected cpu | cuda | auto",
                {.key = r.key});
  }
  // The simulated device (a test facility) serves every program that can put its model on it.
  const bool usable = p.simulated || r.has_backend;
  if (p.device_count > 0 && usable && (r.device == "auto" || r.device == "cuda")) {
    const int ordinal = GpuOrdinal(r, p);
    return {.device = Device::kCuda,
            .ordinal = ordinal,
            .note = "device: cuda (" + setting + ": " + Where(r) + " takes " +
                    (p.simulated ? std::string("the simulated device (SHARDFLOW_SIMULATE_CUDA=1: "
                                               "the CUDA backend's host twin on the CPU)")
                                 : "GPU " + std::to_string(ordinal) + " of " + Saw(p)) +
                    ")"};
  }
  if (r.device == "auto") {
    if (p.device_count <= 0) {
      return {.note = "device: cpu (" + setting + ": " + Where(r) + " sees no usable GPU " +
                      Saw(p) + ")"};
    }
    return {.warn = true,
            .note = "device: cpu (" + setting + ": " + Where(r) + " sees " + Saw(p) + ", but " +
                    NotAvailableYet(r) + ")"};
  }
  GpuOrdinal(r, p);  // a rank without its GPU says so first
  throw Error(ErrorCode::kInvalidArgument, setting + ": " + NotAvailableYet(r),
              {.key = r.key, .hint = r.key + " = cpu (or auto) runs on the CPU"});
}

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "localhost";
  return host;
}

}  // namespace shardflow::apps
