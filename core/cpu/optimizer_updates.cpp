// Optimizer-update CPU kernels. The loops are kept apart from the per-tensor bookkeeping so that,
// with the arrays declared non-aliasing and the branches hoisted, the compiler vectorises them
// (the optimizer step is a pure streaming pass over parameters, gradients and state:
// memory-bound, so a scalar loop here cost ~12% of an MLP step). Built with -fno-math-errno
// (core/CMakeLists.txt) so Adam's square root vectorises.
#include "core/backend/pointwise.hpp"
#include "core/cpu/kernels.hpp"
#include "core/cpu/parallel.hpp"

namespace shardflow::cpu {

namespace {

// Split over the intra-op threads above this many elements (element-wise: results do not
// depend on the split).
constexpr int64_t kUpdateGrain = int64_t{1} << 15;

template <typename T>
void SgdRange(const SgdParams& p, int64_t n, T* __restrict w, const T* __restrict g,
              T* __restrict v) {
  const T lr = static_cast<T>(p.lr), mu = static_cast<T>(p.momentum),
          wd = static_cast<T>(p.weight_decay);
  if (mu == T(0)) {
    for (int64_t i = 0; i < n; ++i) pointwise::SgdPlain(w[i], g[i], lr, wd);
  } else if (p.nesterov) {
    for (int64_t i = 0; i < n; ++i) pointwise::SgdNesterov(w[i], g[i], v[i], lr, mu, wd);
  } else {
    for (int64_t i = 0; i < n; ++i) pointwise::SgdMomentum(w[i], g[i], v[i], lr, mu, wd);
  }
}

template <typename T>
void AdamRange(const AdamParams& p, int64_t n, T* __restrict w, const T* __restrict g,
               T* __restrict m, T* __restrict v) {
  const pointwise::AdamConstants<T> c{.b1 = static_cast<T>(p.b1),
                                      .b2 = static_cast<T>(p.b2),
                                      .l2 = static_cast<T>(p.l2),
                                      .shrink = static_cast<T>(p.shrink),
                                      .step = static_cast<T>(p.step),
                                      .eps = static_cast<T>(p.eps)};
  for (int64_t i = 0; i < n; ++i) pointwise::Adam(w[i], g[i], m[i], v[i], c);
}

}  // namespace

template <typename T>
void SgdUpdate(const SgdParams& p, int64_t n, T* w, const T* g, T* v) {
  ParallelFor(n, kUpdateGrain, [&](int64_t b, int64_t e) {
    SgdRange(p, e - b, w + b, g + b, v == nullptr ? nullptr : v + b);
  });
}

template <typename T>
void AdamUpdate(const AdamParams& p, int64_t n, T* w, const T* g, T* m, T* v) {
  ParallelFor(n, kUpdateGrain,
              [&](int64_t b, int64_t e) { AdamRange(p, e - b, w + b, g + b, m + b, v + b); });
}

template void SgdUpdate<float>(const SgdParams&, int64_t, float*, const float*, float*);
template void SgdUpdate<double>(const SgdParams&, int64_t, double*, const double*, double*);
template void AdamUpdate<float>(const AdamParams&, int64_t, float*, const float*, float*, float*);
template void AdamUpdate<double>(const AdamParams&, int64_t, double*, const double*, double*,
                                 double*);

}  // namespace shardflow::cpu
