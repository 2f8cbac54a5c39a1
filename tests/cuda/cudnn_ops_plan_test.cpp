// What of the cuDNN pooling, activation, batch-norm and LSTM paths runs without a GPU
// (core/cuda/cudnn_ops.hpp, cudnn_rnn.hpp): the rules of what cuDNN takes, the SHARDFLOW_CUDNN
// switch, and cuDNN's own descriptors held to our shapes — every pooling geometry of a sweep gets
// our output size from cuDNN, batch norm's per-channel tensors are one value per channel, and
// the LSTM's RNN and sequence descriptors keep our sizes. (The LSTM's weight packing is
// tests/core/lstm_weights_test.cpp.) cuDNN's
// arithmetic is tested on a GPU (tests/cuda/cudnn_ops_gpu_test.cpp, label gpu).
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <string>

#include "core/cuda/cudnn_ops.hpp"
#include "core/cuda/cudnn_rnn.hpp"
#include "core/error.hpp"

namespace shardflow::cuda {
namespace {

// Restores the switch after a test that sets it.
class CudnnOpsPlan : public ::testing::Test {
 protected:
  void SetUp() override { SetCudnnOps(true); }
  void TearDown() override { SetCudnnOps(true); }
};

PoolGeometry Valid(int64_t h, int64_t w, int64_t c, int64_t k, int64_t stride) {
  return PoolGeometry{.h = h,
                      .w = w,
                      .c = c,
                      .k = k,
                      .stride = stride,
                      .oh = (h - k) / stride + 1,
                      .ow = (w - k) / stride + 1};
}

TEST_F(CudnnOpsPlan, EveryValidPoolingOfASweepIsOneCudnnAgreesWith) {
  int taken = 0;
  for (int64_t h : {1, 2, 3, 4, 5, 7, 8, 14, 28})
    for (int64_t w : {1, 2, 5, 8, 28})
      for (int64_t k = 1; k <= 4; ++k)
        for (int64_t stride = 1; stride <= 3; ++stride) {
          if (k > h || k > w) continue;
          const PoolGeometry g = Valid(h, w, 3, k, stride);
          const std::string where = "h " + std::to_string(h) + " w " + std::to_string(w) + " k " +
                                    std::to_string(k) + " s " + std::to_string(stride);
          ASSERT_TRUE(CudnnTakesPool(g, 2)) << where;
          const std::array<int, 4> want{2, 3, static_cast<int>(g.oh), static_cast<int>(g.ow)};
          EXPECT_EQ(CudnnPoolOutputDims(g, 2, true), want) << where;
          EXPECT_EQ(CudnnPoolOutputDims(g, 2, false), want) << where;
          ++taken;
        }
  EXPECT_EQ(taken, 348);
}

TEST_F(CudnnOpsPlan, PoolingsCudnnCannotExpressAreLeftToTheKernels) {
  PoolGeometry g = Valid(8, 8, 4, 2, 2);
  ++g.oh;  // not the valid window count
  EXPECT_FALSE(CudnnTakesPool(g, 2));
  EXPECT_FALSE(CudnnTakesPool(Valid(8, 8, 4, 2, 2), 0));  // an empty batch
  // More elements than cuDNN's int: 2^31 / (64 x 64 x 64) = 8192 images is one too many.
  EXPECT_TRUE(CudnnTakesPool(Valid(64, 64, 64, 2, 2), 8191));
  EXPECT_FALSE(CudnnTakesPool(Valid(64, 64, 64, 2, 2), 8192));
}

TEST_F(CudnnOpsPlan, ActivationsCudnnHasAreTakenGeluIsNot) {
  for (ActivationKind k : {ActivationKind::kRelu, ActivationKind::kTanh, ActivationKind::kSigmoid})
    EXPECT_TRUE(CudnnTakesActivation(k, 1000));
  EXPECT_FALSE(CudnnTakesActivation(ActivationKind::kGelu, 1000));
  EXPECT_FALSE(CudnnTakesActivation(ActivationKind::kRelu, 0));
  EXPECT_FALSE(
      CudnnTakesActivation(ActivationKind::kRelu, int64_t{std::numeric_limits<int>::max()} + 1));
}

TEST_F(CudnnOpsPlan, BatchNormTrainingOnTwoRowsOrMoreIsTakenInferenceIsNot) {
  const BatchNormParams train{.n = 50176, .c = 16, .training = true};
  EXPECT_TRUE(CudnnTakesBatchNorm(train));
  BatchNormParams p = train;
  p.training = false;  // a pointwise pass with the moving statistics: the kernels
  EXPECT_FALSE(CudnnTakesBatchNorm(p));
  p = train;
  p.n = 1;  // one value per channel: no variance to estimate; the kernels take it
  EXPECT_FALSE(CudnnTakesBatchNorm(p));
  p.n = 2;
  EXPECT_TRUE(CudnnTakesBatchNorm(p));
  p.n = int64_t{1} << 27;  // 2^27 rows x 16 channels: beyond cuDNN's int
  EXPECT_FALSE(CudnnTakesBatchNorm(p));
  // cuDNN's per-channel tensors are (1, C, 1, 1): one value per channel, as our saved stats.
  const std::array<int, 4> want{1, 16, 1, 1};
  EXPECT_EQ(CudnnBatchNormParamDims(train, false), want);
  EXPECT_EQ(CudnnBatchNormParamDims(train, true), want);
}

// The LSTM: cuDNN's RNN and sequence descriptors hold our sizes (one layer, the input bias only,
// every sequence the layer's length), in float and double; sizes beyond int are not taken.
TEST_F(CudnnOpsPlan, LstmDescriptorsHoldOurSizes) {
  for (const LstmShape& s : {LstmShape{.batch = 3, .steps = 5, .features = 4, .units = 6},
                             LstmShape{.batch = 1, .steps = 1, .features = 1, .units = 1},
                             LstmShape{.batch = 128, .steps = 28, .features = 28, .units = 64}}) {
    ASSERT_TRUE(CudnnTakesLstm(s));
    const std::array<int, 4> want{static_cast<int>(s.features), static_cast<int>(s.units),
                                  static_cast<int>(s.batch), static_cast<int>(s.steps)};
    EXPECT_EQ(CudnnLstmDescriptorSizes(s, false), want);
    EXPECT_EQ(CudnnLstmDescriptorSizes(s, true), want);
  }
  EXPECT_FALSE(CudnnTakesLstm({.batch = 0, .steps = 5, .features = 4, .units = 6}));
  EXPECT_FALSE(CudnnTakesLstm({.batch = 1 << 20, .steps = 1 << 10, .features = 4, .units = 6}));
}

TEST_F(CudnnOpsPlan, TheSwitchTurnsEveryPathOffAndABadValueIsNamed) {
  EXPECT_EQ(ParseCudnnOps(nullptr), unsigned{kCudnnAll});
  EXPECT_EQ(ParseCudnnOps("on"), unsigned{kCudnnAll});
  EXPECT_EQ(ParseCudnnOps("off"), 0u);
  EXPECT_EQ(ParseCudnnOps("pool,lstm"), unsigned{kCudnnPool | kCudnnLstm});
  EXPECT_EQ(ParseCudnnOps("act,bn"), unsigned{kCudnnActivation | kCudnnBatchNorm});
  for (const char* bad : {"maybe", "pool,maybe", "pool,", "ON"}) {
    try {
      ParseCudnnOps(bad);
      FAIL() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::string("SHARDFLOW_CUDNN '") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
  // A list leaves the rest on the kernels.
  SetCudnnOps(unsigned{kCudnnPool | kCudnnLstm});
  EXPECT_TRUE(CudnnTakesPool(Valid(8, 8, 4, 2, 2), 2));
  EXPECT_FALSE(CudnnTakesActivation(ActivationKind::kRelu, 10));
  EXPECT_FALSE(CudnnTakesBatchNorm({.n = 10, .c = 4, .training = true}));
  EXPECT_TRUE(CudnnTakesLstm({.batch = 3, .steps = 5, .features = 4, .units = 6}));
  SetCudnnOps(false);
  for (CudnnOp op : {kCudnnPool, kCudnnActivation, kCudnnBatchNorm, kCudnnLstm})
    EXPECT_FALSE(CudnnOpsOn(op));
  EXPECT_FALSE(CudnnTakesPool(Valid(8, 8, 4, 2, 2), 2));
  EXPECT_FALSE(CudnnTakesActivation(ActivationKind::kRelu, 10));
  EXPECT_FALSE(CudnnTakesBatchNorm({.n = 10, .c = 4, .training = true}));
  EXPECT_FALSE(CudnnTakesLstm({.batch = 3, .steps = 5, .features = 4, .units = 6}));
}

}  // namespace
}  // namespace shardflow::cuda
