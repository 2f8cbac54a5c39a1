#include "core/backend/host_twin.hpp"

#include "core/backend/kernel_backend.hpp"

namespace shardflow {

template <typename T>
Backend<T>& HostTwinBackend() {
  static HostExec exec;
  static KernelBackend<T, HostExec> backend(exec);
  return backend;
}

template Backend<float>& HostTwinBackend<float>();
template Backend<double>& HostTwinBackend<double>();

}  // namespace shardflow
