#include "core/precision/bf16/bf16_precision.hpp"

#include "core/backend/forwarding_backend.hpp"
#include "core/cpu/onednn_conv.hpp"
#include "core/precision/bf16/cpu_bf16_gemm.hpp"

namespace shardflow::bf16 {
namespace {

// The CPU's float backend with bf16 products: oneDNN's bf16 convolutions for a whole layer pass
// where oneDNN builds one, else im2col + Gemm, whose Gemm is bf16. Never Winograd (float only).
class CpuBf16Backend : public ForwardingBackend<float> {
 public:
  using ForwardingBackend<float>::ForwardingBackend;

  void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
            const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
            int64_t ldc) override {
    CpuGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  bool ConvForward(const ConvGeometry& g, int64_t f, int64_t batch, const float* x, const float* w,
                   const float* bias, float* y) override {
    return cpu::LibraryConvForward(g, f, batch, x, w, bias, y, cpu::ConvData::kBf16);
  }
  bool ConvBackwardData(const ConvGeometry& g, int64_t f, int64_t batch, const float* dy,
                        const float* w, float* dx) override {
    return cpu::LibraryConvBackwardData(g, f, batch, dy, w, dx, cpu::ConvData::kBf16);
  }
  bool ConvBackwardFilter(const ConvGeometry& g, int64_t f, int64_t batch, const float* x,
                          const float* dy, float* dw) override {
    return cpu::LibraryConvBackwardFilter(g, f, batch, x, dy, dw, cpu::ConvData::kBf16);
  }
  bool LstmForward(const LstmShape&, bool, const float*, const float*, const float*, const float*,
                   float*, std::unique_ptr<LstmSaved>*) override {
    return false;  // step by step: the gates' GEMMs are bf16
  }
};

}  // namespace

PrecisionSpec Bf16Precision() {
  return {
      .name = "bf16",
      .help = "bf16 inputs to matrix products, summed in float; the rest float",
      .unsupported = [](Device device) -> std::string {
        if (device == Device::kCpu) return CpuUnsupported();
        return std::string("no bf16 kernels for device ") + DeviceName(device) + " yet";
      },
      .auto_declines = [](Device device) -> std::string {
        if (device == Device::kCpu && !CpuHasMatrixUnits()) {
          return "AVX512-BF16 without AMX: oneDNN's bf16 matmul ran at half its float rate on "
                 "such a CPU (BENCHMARKS.md)";
        }
        return "";
      },
      .wrap = [](Device, Backend<float>& base) -> std::unique_ptr<Backend<float> > {
        return std::make_unique<CpuBf16Backend>(base);
      },
      .kernels = [](Device) { return "oneDNN " + CpuKernelName(); },
  };
}

}  // namespace shardflow::bf16
