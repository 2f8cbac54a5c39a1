// A device is one runtime registered once (core/backend/device_runtime.hpp, docs/design.md
// decision 65): this test adds a device from its own file, a toy whose backend forwards every op
// to the CPU backend and counts it and whose memory is host memory flagged as the device's, and
// trains small models on it. Nothing else in the tree knows the toy: the layers, the model, the
// losses, the optimizers and the host staging reach it through its runtime alone. Its results
// are the CPU's bit for bit (the same kernels run), its ops went through the toy (the counts),
// and host code cannot read its tensors by accident (they are flagged Device::kTest).
#include "core/backend/device_runtime.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/cpu/cpu_backend.hpp"
#include "core/host_staging.hpp"
#include "core/loss.hpp"
#include "core/model.hpp"
#include "core/optim/optimizer.hpp"
#include "core/random.hpp"

namespace shardflow {
namespace device_runtime_test {

// Every op of the CPU backend, counted. The toy's memory is host memory, so its pointers are the
// CPU's; only the labels, a Tensor flagged with the toy's device, are viewed as a CPU tensor.
template <typename T>
class CountingBackend final : public Backend<T> {
 public:
  explicit CountingBackend(std::atomic<int64_t>& calls) : calls_(calls) {}
  Device device() const override { return Device::kTest; }
  void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda,
            const T* b, int64_t ldb, T beta, T* c, int64_t ldc) override {
    Cpu().Gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void Im2Col(const ConvGeometry& g, int64_t batch, const T* x, T* cols) override {
    Cpu().Im2Col(g, batch, x, cols);
  }
  void Col2ImAdd(const ConvGeometry& g, int64_t batch, const T* cols, T* dx) override {
    Cpu().Col2ImAdd(g, batch, cols, dx);
  }
  bool ConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* w,
                   const T* bias, T* y) override {
    return Cpu().ConvForward(g, f, batch, x, w, bias, y);
  }
  bool ConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const T* dy, const T* w,
                        T* dx) override {
    return Cpu().ConvBackwardData(g, f, batch, dy, w, dx);
  }
  bool ConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const T* x, const T* dy,
                          T* dw) override {
    return Cpu().ConvBackwardFilter(g, f, batch, x, dy, dw);
  }
  void Fill(int64_t n, T value, T* y) override { Cpu().Fill(n, value, y); }
  void BroadcastRows(int64_t rows, int64_t cols, const T* row, T* y) override {
    Cpu().BroadcastRows(rows, cols, row, y);
  }
  void AddRows(int64_t rows, int64_t cols, const T* x, int64_t ldx, T* y) override {
    Cpu().AddRows(rows, cols, x, ldx, y);
  }
  void Transpose(int64_t rows, int64_t cols, const T* x, T* y) override {
    Cpu().Transpose(rows, cols, x, y);
  }
  void Add(int64_t n, const T* a, const T* b, T* y) override { Cpu().Add(n, a, b, y); }
  void Mul(int64_t n, const T* a, const T* b, T* y) override { Cpu().Mul(n, a, b, y); }
  void Scale(int64_t n, T s, T* y) override { Cpu().Scale(n, s, y); }
  void Activation(ActivationKind kind, int64_t n, const T* x, T* y) override {
    Cpu().Activation(kind, n, x, y);
  }
  void ActivationGrad(ActivationKind kind, int64_t n, const T* x, const T* y, const T* dy,
                      T* dx) override {
    Cpu().ActivationGrad(kind, n, x, y, dy, dx);
  }
  void Repeat(int64_t b, int64_t times, int64_t h, const T* x, T* y) override {
    Cpu().Repeat(b, times, h, x, y);
  }
  void RepeatGrad(int64_t b, int64_t times, int64_t h, const T* dy, T* dx) override {
    Cpu().RepeatGrad(b, times, h, dy, dx);
  }
  void AddColumnSums(int64_t rows, int64_t cols, const T* x, T* sums) override {
    Cpu().AddColumnSums(rows, cols, x, sums);
  }
  double SumSquares(int64_t n, const T* x) override { return Cpu().SumSquares(n, x); }
  void Pool2D(const PoolGeometry& g, bool max, int64_t batch, const T* x, T* y) override {
    Cpu().Pool2D(g, max, batch, x, y);
  }
  void Pool2DGrad(const PoolGeometry& g, bool max, bool relu, int64_t batch, const T* x, const T* y,
                  const T* dy, T* dx) override {
    Cpu().Pool2DGrad(g, max, relu, batch, x, y, dy, dx);
  }
  void GlobalAvgPool(int64_t b, int64_t p, int64_t c, const T* x, T* y) override {
    Cpu().GlobalAvgPool(b, p, c, x, y);
  }
  void GlobalAvgPoolGrad(int64_t b, int64_t p, int64_t c, const T* dy, T* dx) override {
    Cpu().GlobalAvgPoolGrad(b, p, c, dy, dx);
  }
  int BatchNorm(const BatchNormParams& p, const T* x, const T* gamma, const T* beta, T* moving_mean,
                T* moving_var, double* saved, T* y) override {
    return Cpu().BatchNorm(p, x, gamma, beta, moving_mean, moving_var, saved, y);
  }
  void BatchNormGrad(const BatchNormParams& p, const T* dy, const T* x, const T* gamma,
                     const double* saved, T* dgamma, T* dbeta, T* dx) override {
    Cpu().BatchNormGrad(p, dy, x, gamma, saved, dgamma, dbeta, dx);
  }
  void LstmCell(int64_t batch, int64_t h, T* z, int64_t ldz, T* c, T* hs, int64_t ldc,
                bool has_prev) override {
    Cpu().LstmCell(batch, h, z, ldz, c, hs, ldc, has_prev);
  }
  void LstmCellGrad(int64_t batch, int64_t h, const T* z, int64_t ldz, const T* c, int64_t ldc,
                    bool has_prev, const T* dh, T* dc, T* dz) override {
    Cpu().LstmCellGrad(batch, h, z, ldz, c, ldc, has_prev, dh, dc, dz);
  }
  void DropoutMask(int64_t n, float rate, T scale, uint64_t seed, uint64_t stream, const T* x,
                   T* mask, T* y) override {
    Cpu().DropoutMask(n, rate, scale, seed, stream, x, mask, y);
  }
  void FillNormal(int64_t n, double stddev, uint64_t seed, uint64_t stream, T* w) override {
    Cpu().FillNormal(n, stddev, seed, stream, w);
  }
  void FillUniform(int64_t n, double limit, uint64_t seed, uint64_t stream, T* w) override {
    Cpu().FillUniform(n, limit, seed, stream, w);
  }
  void DropoutMaskSlice(const SliceIndex& s, float rate, T scale, uint64_t seed, uint64_t stream,
                        const T* x, T* mask, T* y) override {
    Cpu().DropoutMaskSlice(s, rate, scale, seed, stream, x, mask, y);
  }
  void FillNormalSlice(const SliceIndex& s, double stddev, uint64_t seed, uint64_t stream,
                       T* w) override {
    Cpu().FillNormalSlice(s, stddev, seed, stream, w);
  }
  void FillUniformSlice(const SliceIndex& s, double limit, uint64_t seed, uint64_t stream,
                        T* w) override {
    Cpu().FillUniformSlice(s, limit, seed, stream, w);
  }
  void SgdUpdate(const SgdParams& p, int64_t n, T* w, const T* g, T* v) override {
    Cpu().SgdUpdate(p, n, w, g, v);
  }
  void AdamUpdate(const AdamParams& p, int64_t n, T* w, const T* g, T* m, T* v) override {
    Cpu().AdamUpdate(p, n, w, g, m, v);
  }
  double SoftmaxCrossEntropy(int64_t b, int64_t k, const T* z, const Tensor& labels,
                             T* d) override {
    const Tensor host = Tensor::View(const_cast<void*>(labels.raw_data()), labels.dtype(),
                                     labels.shape(), Device::kCpu);
    return Cpu().SoftmaxCrossEntropy(b, k, z, host, d);
  }
  double MeanSquaredError(int64_t n, const T* y, const T* target, T* d) override {
    return Cpu().MeanSquaredError(n, y, target, d);
  }

 private:
  Backend<T>& Cpu() {
    ++calls_;
    return cpu::CpuBackend<T>();
  }
  std::atomic<int64_t>& calls_;
};

// Host memory standing in for the toy's, counting what crosses to and from the host.
class ToyMemory final : public DeviceMemory {
 public:
  void* Allocate(size_t bytes) override {
    void* p = std::malloc(bytes);
    if (p == nullptr) throw std::bad_alloc();
    ++allocations;
    return p;
  }
  void Free(void* p) override { std::free(p); }
  void Zero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }
  void CopyToDevice(void* dst, const void* src, size_t bytes) override {
    ++to_device;
    std::memcpy(dst, src, bytes);
  }
  void CopyToHost(void* dst, const void* src, size_t bytes) override {
    ++to_host;
    std::memcpy(dst, src, bytes);
  }
  void CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
  }
  std::atomic<int64_t> allocations{0}, to_device{0}, to_host{0};
};

// The toy device, registered for the scope's life: the one registration a device needs.
class ToyDevice {
 public:
  ToyDevice() {
    RegisterDeviceRuntime({.device = Device::kTest,
                           .name = "toy (the CPU backend, counted)",
                           .f32 = &f32_,
                           .f64 = &f64_,
                           .memory = &memory});
  }
  ~ToyDevice() { UnregisterDeviceRuntime(Device::kTest); }
  ToyDevice(const ToyDevice&) = delete;
  ToyDevice& operator=(const ToyDevice&) = delete;

  std::atomic<int64_t> calls{0};
  ToyMemory memory;

 private:
  CountingBackend<float> f32_{calls};
  CountingBackend<double> f64_{calls};
};

struct TrainRun {
  std::vector<double> losses;
  std::vector<float> params;
};

// `steps` SGD steps of `spec` on a fixed random batch, the model on `device`.
TrainRun Train(const std::string& spec, const Shape& sample, bool regression, Device device) {
  Shape xs = {6};
  xs.insert(xs.end(), sample.begin(), sample.end());
  Tensor x(DType::kFloat32, xs);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = RandomUniform(5, 2, static_cast<uint64_t>(i)) * 2.0f - 1.0f;
  }
  Tensor labels(DType::kInt64, {6});
  for (int64_t i = 0; i < 6; ++i) labels.data<int64_t>()[i] = (i * 7) % 4;
  Sequential<float> m(spec, sample, {.seed = 3, .device = device});
  auto opt = MakeOptimizer({.name = "adam"}, m.arena().size());
  TrainRun run;
  Tensor d;
  for (int step = 0; step < 4; ++step) {
    m.set_step(step);
    m.arena().ZeroGrads();
    const Tensor y = m.Forward(x, true);
    EXPECT_EQ(y.device(), device);
    run.losses.push_back(regression ? MeanSquaredError<float>(y, x, &d)
                                    : SoftmaxCrossEntropy<float>(y, labels, &d));
    m.Backward(d);
    opt->Step(m.arena(), 0.01);
  }
  const Tensor params = m.arena().params_tensor().To(Device::kCpu);
  run.params.assign(params.data<float>(), params.data<float>() + m.arena().size());
  return run;
}

TEST(DeviceRuntime, ADeviceRegisteredFromATestTrainsAsTheCpuDoes) {
  const struct {
    std::string spec;
    Shape sample;
    bool regression;
  } cases[] = {
      {"flatten, dense:12, gelu, dropout:0.25, dense:4", {3, 5}, false},
      {"conv:3:3x3:same, batchnorm, relu, maxpool:2:2, flatten, dense:4", {6, 6, 2}, false},
      {"lstm:4, repeat, lstm:4:seq, dense:2", {3, 2}, true},
  };
  for (const auto& c : cases) {
    const TrainRun want = Train(c.spec, c.sample, c.regression, Device::kCpu);
    ToyDevice toy;
    const TrainRun got = Train(c.spec, c.sample, c.regression, Device::kTest);
    EXPECT_EQ(got.losses, want.losses) << c.spec;
    EXPECT_EQ(got.params, want.params) << c.spec;
    EXPECT_LT(want.losses.back(), want.losses.front()) << c.spec << " did not learn";
    EXPECT_GT(toy.calls.load(), 0) << c.spec << ": no op went through the toy";
    EXPECT_GT(toy.memory.allocations.load(), 0) << c.spec;
    EXPECT_GT(toy.memory.to_host.load(), 0) << c.spec;  // the parameters, read back
  }
}

TEST(DeviceRuntime, ItsTensorsAreItsOwnAndItsValuesReachTheHostThroughStaging) {
  ToyDevice toy;
  EXPECT_FALSE(DeviceSupports(Device::kTest, DeviceFeature::kHostMemory));
  EXPECT_TRUE(DeviceSupports(Device::kCpu, DeviceFeature::kHostMemory));
  EXPECT_EQ(DeviceRuntimeFor(Device::kTest).name, "toy (the CPU backend, counted)");
  Tensor host(DType::kFloat32, {5});
  for (int i = 0; i < 5; ++i) host.data<float>()[i] = static_cast<float>(i) + 0.5f;
  Tensor on_toy = host.To(Device::kTest);
  EXPECT_THROW(on_toy.data<float>(), Error);  // a host read of device memory is refused

  HostStaging staging(Device::kTest);
  EXPECT_FALSE(staging.pass_through());
  float* view = staging.ToHost(on_toy.device_data<float>(), 5);
  EXPECT_NE(view, on_toy.device_data<float>());
  EXPECT_EQ(view[3], 3.5f);
  view[3] = -1.0f;
  staging.ToDevice(on_toy.device_data<float>(), view, 5);
  EXPECT_EQ(on_toy.To(Device::kCpu).data<float>()[3], -1.0f);
  EXPECT_GE(toy.memory.to_device.load(), 2);

  // On the CPU the staging passes through: the view is the range, nothing is copied.
  HostStaging cpu(Device::kCpu);
  EXPECT_TRUE(cpu.pass_through());
  EXPECT_EQ(cpu.ToHost(host.data<float>(), 5), host.data<float>());
  // Input staging: the toy has none of its own, so the synchronous default over its memory.
  EXPECT_THROW(DeviceStagingFor(Device::kCpu), Error);
  float staged[5] = {};
  DeviceStaging& input = DeviceStagingFor(Device::kTest);
  input.Copy(0, on_toy.device_data<float>(), staged, sizeof(staged));
  EXPECT_EQ(on_toy.To(Device::kCpu).data<float>()[3], 0.0f);
}

TEST(DeviceRuntime, AnIncompleteOrMissingRuntimeIsRefusedNamingTheDevice) {
  EXPECT_EQ(FindDeviceRuntime(Device::kTest), nullptr);
  try {
    BackendFor<float>(Device::kTest);
    FAIL() << "a backend for an unregistered device";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("device test"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tensor(DType::kFloat32, {2}, Device::kTest), Error);
  const DeviceRuntime incomplete{.device = Device::kTest, .f32 = &cpu::CpuBackend<float>()};
  EXPECT_THROW(RegisterDeviceRuntime(incomplete), Error);  // no double backend, no memory
  EXPECT_THROW(UnregisterDeviceRuntime(Device::kCpu), Error);
  EXPECT_EQ(&BackendFor<float>(Device::kCpu), &cpu::CpuBackend<float>());
}

}  // namespace device_runtime_test
}  // namespace shardflow
