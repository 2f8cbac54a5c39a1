// GPU-only: the CUDA backend's pooling, activations and batch norm through cuDNN
// (core/cuda/cudnn_ops.hpp) against the CPU backend in double, forward and backward, in float
// and double; and the switch that keeps them on our kernels. Skipped, with the reason, without
// a GPU. (The host-twin tests of the GPU suite check our own kernels with cuDNN switched off.)
//
// Bounds (normalised error, max |got - want| / max(1, max |want|)): pooling picks or averages
// inputs (float: a few ulps of the average); activations are cuDNN's tanh/sigmoid against
// glibc's (a few float ulps); batch norm computes a float model's statistics in float over up
// to 50,176 rows (ours: double), so its float bound is looser. double: rounding only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/arena.hpp"
#include "core/cpu/cpu_backend.hpp"
#include "core/cuda/cudnn_ops.hpp"
#include "core/cuda/cudnn_rnn.hpp"
#include "core/device_scope.hpp"
#include "core/model.hpp"
#include "core/random.hpp"
#include "tests/cuda/gpu_reference.hpp"

namespace shardflow::cuda {
namespace {

using testing::As;
using testing::ReferenceError;
// Every test holds cuDNN's refusals at zero: a call cuDNN refused runs our kernels, which give
// the right answer too, and must not pass as a tested cuDNN path.
class CudnnOpsGpu : public testing::GpuTest {
 protected:
  void SetUp() override {
    testing::GpuTest::SetUp();
    SetCudnnOps(true);
    refusals_ = CudnnRefusals();
  }
  void TearDown() override {
    EXPECT_EQ(CudnnRefusals(), refusals_) << "cuDNN refused a call (see the warning)";
    SetCudnnOps(true);
  }
  int64_t refusals_ = 0;
};

constexpr double kSentinel = 7.0;  // outputs start here: an op that adds instead of writing shows

std::vector<double> Seeded(int64_t n, uint64_t stream, double lo = -2.0, double hi = 2.0) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = lo + (hi - lo) * RandomUniform(31, stream, i);
  return v;
}

Backend<double>& Ref() { return cpu::CpuBackend<double>(); }

template <typename T>
void CheckPooling(double tol) {
  struct Case {
    int64_t h, w, c, k, stride, batch;
  };
  // The last two leave rows and columns no window covers (their dx must be written as 0), one
  // with the stride beyond the window.
  for (const Case& c : {Case{28, 28, 16, 2, 2, 8}, Case{11, 9, 5, 3, 2, 3}, Case{7, 7, 3, 3, 1, 2},
                        Case{4, 6, 1, 1, 1, 1}, Case{8, 10, 3, 3, 2, 2}, Case{7, 7, 2, 2, 3, 2}}) {
    const PoolGeometry g{.h = c.h,
                         .w = c.w,
                         .c = c.c,
                         .k = c.k,
                         .stride = c.stride,
                         .oh = (c.h - c.k) / c.stride + 1,
                         .ow = (c.w - c.k) / c.stride + 1};
    ASSERT_TRUE(CudnnTakesPool(g, c.batch));
    const int64_t in = c.batch * c.h * c.w * c.c, out = c.batch * g.oh * g.ow * c.c;
    const std::vector<double> x = Seeded(in, 1), dy = Seeded(out, 2);
    for (bool max : {true, false})
      for (bool relu : {false, true}) {
        if (relu && !max) continue;
        std::vector<double> y_ref(out), dx_ref(in);
        Ref().Pool2D(g, max, c.batch, x.data(), y_ref.data());
        Ref().Pool2DGrad(g, max, relu, c.batch, x.data(), y_ref.data(), dy.data(), dx_ref.data());
        const std::vector<T> xt = As<T>(x), dyt = As<T>(dy);
        std::vector<T> y(out, T(kSentinel)), dx(in, T(kSentinel));
        Backend<T>& gpu = testing::DeviceMirror<T>();
        gpu.Pool2D(g, max, c.batch, xt.data(), y.data());
        gpu.Pool2DGrad(g, max, relu, c.batch, xt.data(), y.data(), dyt.data(), dx.data());
        const std::string where = std::string(max ? "max" : "avg") + (relu ? "+relu " : " ") +
                                  std::to_string(c.h) + "x" + std::to_string(c.w) + " k" +
                                  std::to_string(c.k) + " s" + std::to_string(c.stride);
        EXPECT_LE(ReferenceError(y, y_ref), tol) << where << " forward";
        EXPECT_LE(ReferenceError(dx, dx_ref), tol) << where << " backward (dx overwritten)";
      }
  }
}

TEST_F(CudnnOpsGpu, PoolingMatchesTheCpuInDouble) {
  CheckPooling<float>(1e-6);
  CheckPooling<double>(1e-13);
}

template <typename T>
void CheckActivations(double tol) {
  const int64_t n = 10007;
  const std::vector<double> x = Seeded(n, 3, -6.0, 6.0), dy = Seeded(n, 4);
  for (ActivationKind kind :
       {ActivationKind::kRelu, ActivationKind::kTanh, ActivationKind::kSigmoid}) {
    ASSERT_TRUE(CudnnTakesActivation(kind, n));
    std::vector<double> y_ref(n), dx_ref(n);
    Ref().Activation(kind, n, x.data(), y_ref.data());
    Ref().ActivationGrad(kind, n, x.data(), y_ref.data(), dy.data(), dx_ref.data());
    const std::vector<T> xt = As<T>(x), dyt = As<T>(dy);
    std::vector<T> y(n, T(kSentinel)), dx(n, T(kSentinel));
    Backend<T>& gpu = testing::DeviceMirror<T>();
    gpu.Activation(kind, n, xt.data(), y.data());
    gpu.ActivationGrad(kind, n, xt.data(), y.data(), dyt.data(), dx.data());
    EXPECT_LE(ReferenceError(y, y_ref), tol) << static_cast<int>(kind) << " forward";
    EXPECT_LE(ReferenceError(dx, dx_ref), tol) << static_cast<int>(kind) << " backward";
  }
}

TEST_F(CudnnOpsGpu, ActivationsMatchTheCpuInDouble) {
  CheckActivations<float>(4e-6);
  CheckActivations<double>(1e-13);
}

template <typename T>
void CheckBatchNorm(double tol) {
  for (auto [n, c] : {std::pair<int64_t, int64_t>{2, 3}, {37, 6}, {2500, 16}, {50176, 16}}) {
    BatchNormParams p{.n = n, .c = c, .training = true, .momentum = 0.9};
    ASSERT_TRUE(CudnnTakesBatchNorm(p));
    const std::vector<double> x = Seeded(n * c, 5, -1.0, 3.0), dy = Seeded(n * c, 6);
    const std::vector<double> gamma = Seeded(c, 7, 0.5, 1.5), beta = Seeded(c, 8);
    const std::vector<double> mm0 = Seeded(c, 9), mv0 = Seeded(c, 10, 0.5, 2.0);
    const std::vector<double> dg0 = Seeded(c, 11), db0 = Seeded(c, 12);
    std::vector<double> mm_ref = mm0, mv_ref = mv0, saved_ref(kBatchNormSavedPerChannel * c);
    std::vector<double> y_ref(n * c), dg_ref = dg0, db_ref = db0, dx_ref(n * c);
    Ref().BatchNorm(p, x.data(), gamma.data(), beta.data(), mm_ref.data(), mv_ref.data(),
                    saved_ref.data(), y_ref.data());
    Ref().BatchNormGrad(p, dy.data(), x.data(), gamma.data(), saved_ref.data(), dg_ref.data(),
                        db_ref.data(), dx_ref.data());
    const std::vector<T> xt = As<T>(x), dyt = As<T>(dy), gt = As<T>(gamma), bt = As<T>(beta);
    std::vector<T> mm = As<T>(mm0), mv = As<T>(mv0), dg = As<T>(dg0), db = As<T>(db0);
    std::vector<T> y(n * c, T(kSentinel)), dx(n * c, T(kSentinel));
    std::vector<double> saved(kBatchNormSavedPerChannel * c);
    Backend<T>& gpu = testing::DeviceMirror<T>();
    p.saved_form = gpu.BatchNorm(p, xt.data(), gt.data(), bt.data(), mm.data(), mv.data(),
                                 saved.data(), y.data());
    EXPECT_NE(p.saved_form, kBatchNormSavedByKernels) << "cuDNN did not take the pass";
    gpu.BatchNormGrad(p, dyt.data(), xt.data(), gt.data(), saved.data(), dg.data(), db.data(),
                      dx.data());
    const std::string where = std::to_string(n) + " x " + std::to_string(c);
    EXPECT_LE(ReferenceError(y, y_ref), tol) << where << " y";
    EXPECT_LE(ReferenceError(mm, mm_ref), tol) << where << " moving mean";
    EXPECT_LE(ReferenceError(mv, mv_ref), tol) << where << " moving variance (unbiased)";
    EXPECT_LE(ReferenceError(dg, dg_ref), tol) << where << " dgamma (added to what was there)";
    EXPECT_LE(ReferenceError(db, db_ref), tol) << where << " dbeta (added to what was there)";
    EXPECT_LE(ReferenceError(dx, dx_ref), tol) << where << " dx";
    // The first layer's backward pass (no dx) gives the same parameter gradients.
    std::vector<T> dg2 = As<T>(dg0), db2 = As<T>(db0);
    gpu.BatchNormGrad(p, dyt.data(), xt.data(), gt.data(), saved.data(), dg2.data(), db2.data(),
                      nullptr);
    EXPECT_EQ(dg2, dg) << where;
    EXPECT_EQ(db2, db) << where;
  }
}

TEST_F(CudnnOpsGpu, TrainingBatchNormMatchesTheCpuInDouble) {
  CheckBatchNorm<float>(1e-4);
  CheckBatchNorm<double>(1e-10);
}

// One LSTM layer on the GPU, its library path (cuDNN's RNN) or its own (SHARDFLOW_CUDNN off):
// the output, the input gradient and the parameter gradients of L = sum(y r).
struct LstmPass {
  std::vector<float> y, dx, grads;
};
std::vector<float> Host(const Tensor& t) {
  const Tensor h = t.To(Device::kCpu);
  return std::vector<float>(h.data<float>(), h.data<float>() + h.num_elements());
}
LstmPass RunLstm(const std::string& spec, int64_t batch, const Shape& in, bool cudnn,
                 bool training) {
  SetCudnnOps(cudnn);
  DeviceScope scope(Device::kCuda);
  Arena<float> arena;
  auto layer = MakeLayerFromSpec<float>(spec, in, {});
  BuildContext<float> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_lstm"};
  const Shape out = layer->Build(in, ctx);
  arena.Allocate(Device::kCuda);
  layer->Initialize(7);
  Tensor x(DType::kFloat32, WithBatch(batch, in)), r(DType::kFloat32, WithBatch(batch, out));
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = RandomNormal(3, 1, i);
  for (int64_t i = 0; i < r.num_elements(); ++i) r.data<float>()[i] = RandomNormal(3, 2, i);
  const Tensor y = layer->Forward(x.To(Device::kCuda), ForwardContext{.training = training});
  LstmPass pass;
  pass.y = Host(y);
  arena.ZeroGrads();
  pass.dx = Host(layer->Backward(r.To(Device::kCuda), true));
  pass.grads = Host(arena.grads_tensor());
  return pass;
}

template <typename T>
double Normalised(const std::vector<T>& got, const std::vector<T>& want) {
  return ReferenceError(got, std::vector<double>(want.begin(), want.end()));
}

// cuDNN's LSTM against the layer's own GEMMs and cell kernel on the same GPU, float: every
// step's output and only the last, F != H (a transposed matrix shows), after a training forward
// pass and after an inference one (cuDNN's backward then runs the pass again for its reserve).
TEST_F(CudnnOpsGpu, LstmMatchesTheLayersOwnPath) {
  for (const std::string spec : {"lstm:5:seq", "lstm:5"})
    for (bool training : {true, false}) {
      const LstmPass want = RunLstm(spec, 3, {4, 3}, false, training);
      const LstmPass got = RunLstm(spec, 3, {4, 3}, true, training);
      const std::string where = spec + (training ? " training" : " inference");
      EXPECT_LE(Normalised(got.y, want.y), 1e-5) << where << " output";
      EXPECT_LE(Normalised(got.dx, want.dx), 1e-5) << where << " input gradient";
      EXPECT_LE(Normalised(got.grads, want.grads), 1e-5) << where << " parameter gradients";
    }
}

// SHARDFLOW_CUDNN = off: none of the three is taken (the backend runs our index kernels, which
// the host-twin tests of this suite check).
TEST_F(CudnnOpsGpu, OffKeepsEveryOpOnTheKernels) {
  SetCudnnOps(false);
  EXPECT_FALSE(CudnnTakesPool({.h = 4, .w = 4, .c = 1, .k = 2, .stride = 2, .oh = 2, .ow = 2}, 1));
  EXPECT_FALSE(CudnnTakesActivation(ActivationKind::kRelu, 4));
  EXPECT_FALSE(CudnnTakesBatchNorm({.n = 4, .c = 1, .training = true}));
  EXPECT_FALSE(CudnnTakesLstm({.batch = 2, .steps = 3, .features = 4, .units = 5}));
}

}  // namespace
}  // namespace shardflow::cuda
