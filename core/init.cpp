#include "core/init.hpp"

#include <cmath>

#include "core/backend/backend.hpp"
#include "core/device_scope.hpp"
#include "core/error.hpp"

namespace shardflow {

InitKind ParseInitKind(const std::string& name) {
  if (name == "he") return InitKind::kHeNormal;
  if (name == "glorot") return InitKind::kGlorotUniform;
  throw Error(ErrorCode::kInvalidArgument, "unknown initializer '" + name + "'",
              {.hint = "use he or glorot"});
}

const char* InitKindName(InitKind kind) { return kind == InitKind::kHeNormal ? "he" : "glorot"; }

// w is the parameter arena's memory, on the current device (core/device_scope.hpp).
template <typename T>
void InitKernel(InitKind kind, T* w, int64_t n, int64_t fan_in, int64_t fan_out, uint64_t seed,
                uint64_t stream) {
  Backend<T>& be = BackendFor<T>(CurrentDevice());
  if (kind == InitKind::kHeNormal) {
    be.FillNormal(n, std::sqrt(2.0 / static_cast<double>(fan_in)), seed, stream, w);
  } else {
    be.FillUniform(n, std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)), seed, stream, w);
  }
}

template <typename T>
void InitKernelSlice(InitKind kind, T* w, const SliceIndex& slice, int64_t fan_in, int64_t fan_out,
                     uint64_t seed, uint64_t stream) {
  Backend<T>& be = BackendFor<T>(CurrentDevice());
  if (kind == InitKind::kHeNormal) {
    be.FillNormalSlice(slice, std::sqrt(2.0 / static_cast<double>(fan_in)), seed, stream, w);
  } else {
    be.FillUniformSlice(slice, std::sqrt(6.0 / static_cast<double>(fan_in + fan_out)), seed, stream,
                        w);
  }
}

template <typename T>
void InitConstant(T* w, int64_t n, T value) {
  BackendFor<T>(CurrentDevice()).Fill(n, value, w);
}

template void InitKernel<float>(InitKind, float*, int64_t, int64_t, int64_t, uint64_t, uint64_t);
template void InitKernel<double>(InitKind, double*, int64_t, int64_t, int64_t, uint64_t, uint64_t);
template void InitKernelSlice<float>(InitKind, float*, const SliceIndex&, int64_t, int64_t,
                                     uint64_t, uint64_t);
template void InitKernelSlice<double>(InitKind, double*, const SliceIndex&, int64_t, int64_t,
                                      uint64_t, uint64_t);
template void InitConstant<float>(float*, int64_t, float);
template void InitConstant<double>(double*, int64_t, double);

}  // namespace shardflow
