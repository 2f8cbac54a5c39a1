// train.precision for shardflow-train, -predict and -serve: chosen for the device the program
// installed (core/precision/precision.hpp), installed, and said once.
// Thread-safety: the main thread, once, in the parse phase, after the device is installed.
#pragma once

#include <string>

#include "core/precision/precision.hpp"

namespace shardflow::apps {

// Chooses `want` for `device` (throws Error(kInvalidArgument) naming train.precision when the
// device cannot run it), installs it, and when `say` logs which kernels run the products or
// what auto fell back from.
ChosenPrecision UsePrecision(const std::string& want, Device device, bool say);

}  // namespace shardflow::apps
