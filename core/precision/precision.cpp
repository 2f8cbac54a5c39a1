#include "core/precision/precision.hpp"

#include <array>

#include "core/backend/device_runtime.hpp"
#include "core/error.hpp"
#include "core/precision/bf16/bf16_precision.hpp"
#include "core/thread_annotations.hpp"

namespace shardflow {
namespace {

// The registered precisions, in the order auto tries them.
const std::vector<PrecisionSpec>& BuiltinPrecisions() {
  static const std::vector<PrecisionSpec> list{bf16::Bf16Precision()};
  return list;
}

// What InstallPrecision put on each device: the wrapper it registered (to tell whether the
// runtime still holds it), the backend it wraps, and its name. Wrappers are kept until exit:
// a lookup may still hold one.
struct Installed {
  Mutex mu;
  std::array<Backend<float>*, kDevices> wrapper GUARDED_BY(mu){};
  std::array<Backend<float>*, kDevices> base GUARDED_BY(mu){};
  std::array<std::string, kDevices> name GUARDED_BY(mu);
  std::vector<std::unique_ptr<Backend<float> > > kept GUARDED_BY(mu);
};

Installed& TheInstalled() {
  static Installed* installed = new Installed();  // never destroyed, as the registry
  return *installed;
}

std::string Choices() {
  std::string s;
  for (const std::string& n : PrecisionNames()) s += (s.empty() ? "" : ", ") + n;
  return s + ", auto";
}

}  // namespace

std::vector<std::string> PrecisionNames() {
  std::vector<std::string> names{"fp32"};
  for (const PrecisionSpec& p : BuiltinPrecisions()) names.push_back(p.name);
  return names;
}

const PrecisionSpec* FindPrecision(const std::string& name) {
  for (const PrecisionSpec& p : BuiltinPrecisions())
    if (p.name == name) return &p;
  return nullptr;
}

ChosenPrecision ChoosePrecision(const std::string& want, Device device, const std::string& key) {
  if (want == "fp32") return {.name = "fp32", .kernels = "", .note = ""};
  if (want == "auto") {
    std::string why_not;
    for (const PrecisionSpec& p : BuiltinPrecisions()) {
      std::string why = p.unsupported(device);
      if (why.empty()) why = p.auto_declines(device);
      if (why.empty()) return {.name = p.name, .kernels = p.kernels(device), .note = ""};
      why_not += (why_not.empty() ? "" : "; ") + p.name + ": " + why;
    }
    return {.name = "fp32", .kernels = "", .note = key + " = auto runs fp32 (" + why_not + ")"};
  }
  const PrecisionSpec* p = FindPrecision(want);
  if (p == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                key + " = " + want + " is not a precision (choices: " + Choices() + ")");
  }
  if (const std::string why = p->unsupported(device); !why.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                key + " = " + want + " cannot run on " + DeviceName(device) + ": " + why,
                {.hint = "set " + key + " = fp32, or auto to use " + want + " where it can run"});
  }
  return {.name = want, .kernels = p->kernels(device), .note = ""};
}

void InstallPrecision(Device device, const std::string& name) {
  const ChosenPrecision chosen = ChoosePrecision(name, device, "precision");
  Installed& in = TheInstalled();
  MutexLock lock(in.mu);
  const size_t d = static_cast<size_t>(device);
  DeviceRuntime runtime = DeviceRuntimeFor(device);
  // The device's own float backend: what our wrapper wraps, unless the runtime was replaced
  // since (a device installed after a precision), in which case its new one.
  Backend<float>* base = runtime.f32 == in.wrapper[d] ? in.base[d] : runtime.f32;
  if (chosen.name == "fp32") {
    runtime.f32 = base;
    in.wrapper[d] = nullptr;
  } else {
    in.kept.push_back(FindPrecision(chosen.name)->wrap(device, *base));
    runtime.f32 = in.kept.back().get();
    in.wrapper[d] = runtime.f32;
  }
  in.base[d] = base;
  in.name[d] = chosen.name;
  RegisterDeviceRuntime(runtime);
}

std::string InstalledPrecision(Device device) {
  Installed& in = TheInstalled();
  MutexLock lock(in.mu);
  const size_t d = static_cast<size_t>(device);
  const DeviceRuntime* runtime = FindDeviceRuntime(device);
  if (runtime == nullptr || in.wrapper[d] == nullptr || runtime->f32 != in.wrapper[d]) {
    return "fp32";
  }
  return in.name[d];
}

PrecisionScope::PrecisionScope(Device device, const std::string& name)
    : device_(device), saved_(InstalledPrecision(device)) {
  InstallPrecision(device, name);
}

PrecisionScope::~PrecisionScope() { InstallPrecision(device_, saved_); }

}  // namespace shardflow
