// The LSTM weights in cuDNN's per-gate layout (core/backend/kernels/lstm_weights.hpp), run by the
// host twin's executor: what cuDNN computes from the packed space with its documented formula,
// z_q = W_q x + R_q h + b_q per gate q, is our z = x W + h U + b; the unpacking is the packing's
// adjoint and adds. The layouts are made up (gates out of order, gaps, with and without a
// recurrent bias), so the kernels must follow the offsets cuDNN reports, not an assumed order.
#include "core/backend/kernels/lstm_weights.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/backend/host_twin.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace lstm_weights_test {

using kernels::LstmWeightLayout;

std::vector<double> Seeded(int64_t n, uint64_t stream) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = RandomNormal(5, stream, i);
  return v;
}

// Gates stored in the order o, g, i, f with a gap of 3 elements after each piece; the recurrent
// bias, when there is one, after everything. Returns the space's size.
int64_t MakeLayout(int64_t f, int64_t h, bool recurrent_bias, LstmWeightLayout* l) {
  const int order[4] = {3, 2, 0, 1};
  int64_t at = 0;
  for (int q : order) {
    l->w[q] = at;
    at += h * f + 3;
    l->r[q] = at;
    at += h * h + 3;
    l->b[q] = at;
    at += h + 3;
  }
  for (int q = 0; q < 4; ++q) {
    l->rb[q] = recurrent_bias ? at : -1;
    at += recurrent_bias ? h : 0;
  }
  return at;
}

TEST(LstmWeights, CudnnsFormulaOnThePackedSpaceIsOurs) {
  const int64_t f = 5, h = 3, g4 = 4 * h;
  for (bool rb : {false, true}) {
    LstmWeightLayout l;
    const int64_t size = MakeLayout(f, h, rb, &l);
    const std::vector<double> w = Seeded(f * g4, 1), u = Seeded(h * g4, 2), b = Seeded(g4, 3);
    // Every place the layout names is written; the gaps keep their NaN.
    std::vector<double> space(size, std::numeric_limits<double>::quiet_NaN());
    HostExec exec;
    exec.Run(
        kernels::PackLstmWeightsK<double>::Size(f, h),
        kernels::PackLstmWeightsK<double>{l, f, h, w.data(), u.data(), b.data(), space.data()});
    const std::vector<double> x = Seeded(f, 4), hp = Seeded(h, 5);
    for (int q = 0; q < 4; ++q)
      for (int64_t j = 0; j < h; ++j) {
        double theirs = 0.0, ours = 0.0;
        for (int64_t k = 0; k < f; ++k) theirs += space[l.w[q] + j * f + k] * x[k];
        for (int64_t k = 0; k < h; ++k) theirs += space[l.r[q] + j * h + k] * hp[k];
        theirs += space[l.b[q] + j] + (rb ? space[l.rb[q] + j] : 0.0);
        for (int64_t k = 0; k < f; ++k) ours += x[k] * w[k * g4 + q * h + j];
        for (int64_t k = 0; k < h; ++k) ours += hp[k] * u[k * g4 + q * h + j];
        ours += b[q * h + j];
        EXPECT_NEAR(theirs, ours, 1e-12) << "gate " << q << " unit " << j;
      }
    // The gaps are untouched: nothing is written outside the named places.
    int64_t nan = 0;
    for (double v : space) nan += std::isnan(v) ? 1 : 0;
    EXPECT_EQ(nan, 4 * 3 * 3);
  }
}

// <pack(W, U, b), G> = <(W, U, b), unpack(G)> for any G, and unpacking adds to what is there.
TEST(LstmWeights, UnpackingIsThePackingsAdjointAndAdds) {
  const int64_t f = 4, h = 6, g4 = 4 * h;
  for (bool rb : {false, true}) {
    LstmWeightLayout l;
    const int64_t size = MakeLayout(f, h, rb, &l);
    const std::vector<double> w = Seeded(f * g4, 6), u = Seeded(h * g4, 7), b = Seeded(g4, 8);
    const std::vector<double> g = Seeded(size, 9);
    std::vector<double> space(size, 0.0);
    HostExec exec;
    exec.Run(
        kernels::PackLstmWeightsK<double>::Size(f, h),
        kernels::PackLstmWeightsK<double>{l, f, h, w.data(), u.data(), b.data(), space.data()});
    const std::vector<double> dw0 = Seeded(f * g4, 10), du0 = Seeded(h * g4, 11),
                              db0 = Seeded(g4, 12);
    std::vector<double> dw = dw0, du = du0, db = db0;
    exec.Run(kernels::UnpackLstmGradsK<double>::Size(f, h),
             kernels::UnpackLstmGradsK<double>{l, f, h, g.data(), dw.data(), du.data(), db.data()});
    double lhs = 0.0, rhs = 0.0;
    for (int64_t i = 0; i < size; ++i) lhs += space[i] * g[i];
    for (int64_t i = 0; i < f * g4; ++i) rhs += w[i] * (dw[i] - dw0[i]);
    for (int64_t i = 0; i < h * g4; ++i) rhs += u[i] * (du[i] - du0[i]);
    for (int64_t i = 0; i < g4; ++i) rhs += b[i] * (db[i] - db0[i]);
    EXPECT_NEAR(lhs, rhs, 1e-9 * std::max(1.0, std::fabs(lhs)))
        << (rb ? "with" : "without") << " a recurrent bias";
    // One element by hand: dW[2][q H + 1] for gate q = 2 (cell) adds W_2[1][2]'s gradient.
    EXPECT_NEAR(dw[2 * g4 + 2 * h + 1] - dw0[2 * g4 + 2 * h + 1], g[l.w[2] + 1 * f + 2], 1e-12);
  }
}

}  // namespace lstm_weights_test
}  // namespace shardflow
