// Precisions: how a device's float kernels compute matrix products (docs/design.md decision
// 69). fp32 is the device's own backend; another precision (bf16, core/precision/bf16/) is one
// folder plus one line in BuiltinPrecisions (precision.cpp): it says whether a device can run it
// and wraps the device's float backend (core/backend/forwarding_backend.hpp), overriding the ops
// it changes. Tensors, master weights, optimizer state, losses and gradients stay float in every
// precision, so checkpoints, all-reduces and every strategy are unchanged by it.
// Thread-safety: InstallPrecision is for the main thread before kernels run (tests: a
// PrecisionScope); lookups any thread.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/backend/backend.hpp"

namespace shardflow {

struct PrecisionSpec {
  std::string name;  // "bf16": the value of train.precision
  std::string help;  // one line for --help
  // "" when `device` can run it in this build; otherwise why not, naming what is missing.
  std::function<std::string(Device)> unsupported;
  // "" when auto should pick it on `device` (it can run it and was measured faster there);
  // otherwise why auto leaves it.
  std::function<std::string(Device)> auto_declines;
  // The float backend of `device` in this precision, over its own (`base`, which outlives it).
  std::function<std::unique_ptr<Backend<float>>(Device, Backend<float>& base)> wrap;
  // Which library kernels run its products on `device` (rank 0 logs it; summary.json).
  std::function<std::string(Device)> kernels;
};

// "fp32", then every registered precision.
std::vector<std::string> PrecisionNames();
// The registered precision called `name`; null for fp32 and unknown names.
const PrecisionSpec* FindPrecision(const std::string& name);

// What ChoosePrecision decided.
struct ChosenPrecision {
  std::string name;     // "fp32" or a registered precision
  std::string kernels;  // its kernels on the device ("" for fp32)
  std::string note;     // what auto fell back from, and why ("" when nothing to say)
};
// Resolves `want` ("fp32", a registered name, or "auto": the first registered precision the
// device runs faster, else fp32) for `device`. Throws Error(kInvalidArgument) for an unknown name,
// or a precision the device cannot run, naming `key` and what is missing.
ChosenPrecision ChoosePrecision(const std::string& want, Device device, const std::string& key);

// Makes `name`'s backend the float backend of `device`'s runtime (fp32: the device's own back),
// for the process's life. Throws as ChoosePrecision (key "precision").
void InstallPrecision(Device device, const std::string& name);
// The precision installed on `device` ("fp32" unless InstallPrecision said otherwise).
std::string InstalledPrecision(Device device);

// Installs a precision for a scope and puts the previous one back (tests).
class PrecisionScope {
 public:
  PrecisionScope(Device device, const std::string& name);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  Device device_;
  std::string saved_;
};

}  // namespace shardflow
