// oneDNN's convolutions (core/cpu/onednn_conv.hpp) against shardflow's im2col + GEMM twin,
// through the conv layer: forward output, input gradient and parameter gradients on odd shapes
// (1 channel, stride 2, valid padding, no bias) and batches around the piece size (1, 15, 16,
// 17, 37); bits independent of the intra-op threads; the kernel gradient added, not written;
// the automatic choice's rule.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/cpu/gemm.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/layers/conv2d.hpp"
#include "core/random.hpp"
#include "tests/core/conv_layer_pass.hpp"

namespace shardflow {
namespace onednn_conv_test {

using Pass = testing::ConvPass;
using Case = testing::ConvCase;
using testing::RunConvPass;

// |a - b| within 1e-4 of the larger magnitude of the two vectors' entries (sums of up to a few
// thousand products of unit normals, in another order).
void ExpectClose(const std::vector<float>& a, const std::vector<float>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  float scale = 1;
  for (float v : b) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 1e-4f * scale) << what << " at " << i;
  }
}

class OneDnnConv : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::OneDnnBuilt()) GTEST_SKIP() << "built without oneDNN (SHARDFLOW_ONEDNN=OFF)";
    before_ = cpu::CurrentConvKernel();
  }
  void TearDown() override {
    if (cpu::OneDnnBuilt()) cpu::SetConvKernel(before_);
  }
  cpu::ConvKernel before_ = cpu::ConvKernel::kAuto;
};

std::vector<Case> Cases() {
  return {
      {{12, 12, 1}, {.filters = 8, .kernel_h = 5, .kernel_w = 5}},
      {{9, 9, 6}, {.filters = 5, .kernel_h = 3, .kernel_w = 3, .stride = 2}},
      {{10, 7, 16}, {.filters = 16, .kernel_h = 3, .kernel_w = 3, .use_bias = false}},
      {{11, 11, 4}, {.filters = 6, .kernel_h = 3, .kernel_w = 2, .same_padding = false}},
      {{8, 8, 8}, {.filters = 12, .kernel_h = 1, .kernel_w = 1, .stride = 2}},
  };
}

std::string Name(const Case& c, int64_t batch) {
  return "in " + ShapeToString(c.in) + " filters " + std::to_string(c.o.filters) + " kernel " +
         std::to_string(c.o.kernel_h) + "x" + std::to_string(c.o.kernel_w) + " stride " +
         std::to_string(c.o.stride) + (c.o.same_padding ? " same" : " valid") + " batch " +
         std::to_string(batch);
}

TEST_F(OneDnnConv, MatchesTheGemmTwinOnEveryPass) {
  for (const Case& c : Cases()) {
    for (int64_t batch : {1, 15, 16, 17, 37}) {
      cpu::SetConvKernel(cpu::ConvKernel::kOwn);
      const Pass own = RunConvPass(c, batch);
      cpu::SetConvKernel(cpu::ConvKernel::kOneDnn);
      const Pass lib = RunConvPass(c, batch);
      const std::string name = Name(c, batch);
      ExpectClose(lib.y, own.y, "forward, " + name);
      ExpectClose(lib.dx, own.dx, "input gradient, " + name);
      ExpectClose(lib.grads, own.grads, "parameter gradients, " + name);
    }
  }
}

TEST_F(OneDnnConv, ReallyRunsTheLibrary) {
  // Not a tautology of the twin test: forced oneDNN must take every pass of these shapes.
  cpu::SetConvKernel(cpu::ConvKernel::kOneDnn);
  const ConvGeometry g = MakeConvGeometry(9, 9, 6, 3, 3, 2, true);
  for (auto pass :
       {cpu::ConvPass::kForward, cpu::ConvPass::kBackwardData, cpu::ConvPass::kBackwardFilter}) {
    std::string impl;
    EXPECT_TRUE(cpu::LibraryConvTakes(g, 5, 17, pass, &impl)) << cpu::ConvPassName(pass);
    EXPECT_FALSE(impl.empty());
  }
  cpu::SetConvKernel(cpu::ConvKernel::kOwn);
  EXPECT_FALSE(cpu::LibraryConvTakes(g, 5, 17, cpu::ConvPass::kForward));
  std::vector<float> x(17 * 9 * 9 * 6, 1.0f), w(3 * 3 * 6 * 5, 1.0f), y(17 * 5 * 5 * 5, -7.0f);
  EXPECT_FALSE(cpu::LibraryConvForward(g, 5, 17, x.data(), w.data(), nullptr, y.data()));
  EXPECT_EQ(y[0], -7.0f);  // untouched when not taken
}

TEST_F(OneDnnConv, SameBitsForAnyThreadCount) {
  cpu::SetConvKernel(cpu::ConvKernel::kOneDnn);
  const int threads = cpu::IntraOpThreads();
  const Case c{{14, 14, 16}, {.filters = 32, .kernel_h = 3, .kernel_w = 3}};
  cpu::SetIntraOpThreads(1);
  const Pass one = RunConvPass(c, 37);
  cpu::SetIntraOpThreads(3);
  const Pass three = RunConvPass(c, 37);
  cpu::SetIntraOpThreads(threads);
  EXPECT_EQ(one.y, three.y);
  EXPECT_EQ(one.dx, three.dx);
  EXPECT_EQ(one.grads, three.grads);
}

TEST_F(OneDnnConv, KernelGradientIsAddedNotWritten) {
  cpu::SetConvKernel(cpu::ConvKernel::kOneDnn);
  const Case c{{9, 9, 6}, {.filters = 5, .kernel_h = 3, .kernel_w = 3, .stride = 2}};
  const Pass once = RunConvPass(c, 17, 1);
  const Pass twice = RunConvPass(c, 17, 2);
  ASSERT_EQ(once.grads.size(), twice.grads.size());
  for (size_t i = 0; i < once.grads.size(); ++i) {
    ASSERT_NEAR(twice.grads[i], 2 * once.grads[i], 1e-5f * (1 + std::abs(once.grads[i]))) << i;
  }
}

TEST_F(OneDnnConv, AutomaticChoiceFollowsTheRule) {
  cpu::SetConvKernel(cpu::ConvKernel::kAuto);
  // The CNN preset's second convolution: oneDNN has direct kernels for every pass.
  const ConvGeometry g = MakeConvGeometry(14, 14, 32, 5, 5, 1, true);
  for (auto pass :
       {cpu::ConvPass::kForward, cpu::ConvPass::kBackwardData, cpu::ConvPass::kBackwardFilter}) {
    std::string impl;
    const bool takes = cpu::LibraryConvTakes(g, 64, 64, pass, &impl);
    EXPECT_EQ(takes, impl.find("gemm") == std::string::npos) << cpu::ConvPassName(pass) << impl;
  }
  // One input channel: backward data stays with the twin (oneDNN's direct kernel ran 18 GFLOP/s).
  const ConvGeometry first = MakeConvGeometry(28, 28, 1, 5, 5, 1, true);
  EXPECT_FALSE(cpu::LibraryConvTakes(first, 32, 64, cpu::ConvPass::kBackwardData));
}

}  // namespace onednn_conv_test
}  // namespace shardflow
