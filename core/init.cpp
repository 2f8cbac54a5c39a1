#include "core/init.hpp"

#include <cmath>

#include "core/error.hpp"
#include "core/random.hpp"

namespace shardflow {

InitKind ParseInitKind(const std::string& name) {
  if (name == "he") return InitKind::kHeNormal;
  if (name == "glorot") return InitKind::kGlorotUniform;
  throw Error(ErrorCode::kInvalidArgument, "unknown initializer '" + name + "'",
              {.hint = "use he or glorot"});
}

const char* InitKindName(InitKind kind) { return kind == InitKind::kHeNormal ? "he" : "glorot"; }

template <typename T>
void InitKernel(InitKind kind, T* w, int64_t n, int64_t fan_in, int64_t fan_out, uint64_t seed,
                uint64_t stream) {
  if (kind == InitKind::kHeNormal) {
    const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in));
    for (int64_t i = 0; i < n; ++i) {
      w[i] = static_cast<T>(stddev * RandomNormal(seed, stream, static_cast<uint64_t>(i)));
    }
  } else {
    const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
    for (int64_t i = 0; i < n; ++i) {
      const double u = RandomUniform(seed, stream, static_cast<uint64_t>(i));
      w[i] = static_cast<T>((2.0 * u - 1.0) * limit);
    }
  }
}

template <typename T>
void InitConstant(T* w, int64_t n, T value) {
  for (int64_t i = 0; i < n; ++i) w[i] = value;
}

template void InitKernel<float>(InitKind, float*, int64_t, int64_t, int64_t, uint64_t, uint64_t);
template void InitKernel<double>(InitKind, double*, int64_t, int64_t, int64_t, uint64_t, uint64_t);
template void InitConstant<float>(float*, int64_t, float);
template void InitConstant<double>(double*, int64_t, double);

}  // namespace shardflow
