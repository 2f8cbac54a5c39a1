// The vectorised tanh and exp (core/cpu/vector_math.hpp): within a few ulp of libm, exp far
// below the float range at most a denormal, and the same bits for a value wherever it lies in
// memory (no scalar head or tail).
#include "core/cpu/vector_math.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/random.hpp"

namespace shardflow {
namespace vector_math_test {

std::vector<float> Inputs(int64_t n, double scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(scale * RandomNormal(4, 0, i));
  return v;
}

TEST(VectorMath, CloseToLibm) {
  const std::vector<float> x = Inputs(1000, 4.0);
  std::vector<float> t(x.size()), e(x.size());
  cpu::TanhFloat(static_cast<int64_t>(x.size()), x.data(), t.data());
  cpu::ExpFloat(static_cast<int64_t>(x.size()), x.data(), e.data());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(t[i], std::tanh(x[i]), 4e-7f) << x[i];
    EXPECT_NEAR(e[i] / std::exp(x[i]), 1.0f, 4e-7f) << x[i];
  }
  const float inf = std::numeric_limits<float>::infinity();
  float edge[3] = {-inf, 0.0f, -100.0f};
  cpu::ExpFloat(3, edge, edge);
  // Far below the float range: zero or a denormal (zero once the kernels flush denormals).
  EXPECT_GE(edge[0], 0.0f);
  EXPECT_LT(edge[0], std::numeric_limits<float>::min());
  EXPECT_EQ(edge[1], 1.0f);
  EXPECT_LT(edge[2], std::numeric_limits<float>::min());
}

// The same values at every offset from an aligned address, in place and not, and any count.
TEST(VectorMath, BitsDoNotDependOnAlignmentOrCount) {
  const std::vector<float> x = Inputs(300, 3.0);
  std::vector<float> want(x.size());
  cpu::TanhFloat(static_cast<int64_t>(x.size()), x.data(), want.data());
  for (int offset = 1; offset < 17; ++offset) {
    std::vector<float> shifted(x.size() + 17);
    std::copy(x.begin(), x.end(), shifted.begin() + offset);
    float* p = shifted.data() + offset;
    cpu::TanhFloat(static_cast<int64_t>(x.size()), p, p);
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(p[i], want[i]) << offset << " " << i;
  }
  std::vector<float> one(1);
  for (size_t i = 0; i < 20; ++i) {
    cpu::TanhFloat(1, &x[i], one.data());
    ASSERT_EQ(one[0], want[i]);
  }
}

}  // namespace vector_math_test
}  // namespace shardflow
