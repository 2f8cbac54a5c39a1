// Elementwise activations: relu, gelu (tanh approximation), tanh, sigmoid. Any input shape.
#pragma once

#include <memory>
#include <string>

#include "core/layers/layer.hpp"

namespace shardflow {

// ActivationKind is declared with the backend ops (core/backend/backend.hpp).
// "relu" | "gelu" | "tanh" | "sigmoid"; throws Error(kInvalidArgument).
ActivationKind ParseActivation(const std::string& name);
const char* ActivationName(ActivationKind kind);

template <typename T>
std::unique_ptr<Layer<T>> MakeActivation(ActivationKind kind);

}  // namespace shardflow
