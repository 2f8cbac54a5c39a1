// The backend registry and the CPU backend's small strided ops against naive loops written here.
// (GEMM, im2col and the layer kernels are checked in kernel_reference_test and
// layer_gradient_test.)
#include "core/backend/backend.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace shardflow {
namespace backend_test {

TEST(Backend, CpuBackendIsInstalledAndADeviceWithoutOneIsAnError) {
  EXPECT_EQ(BackendFor<float>(Device::kCpu).device(), Device::kCpu);
  EXPECT_EQ(BackendFor<double>(Device::kCpu).device(), Device::kCpu);
  // This build registers no CUDA backend (core/cuda holds none yet).
  try {
    BackendFor<float>(Device::kCuda);
    FAIL() << "a backend for cuda in a build without one";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("device cuda"), std::string::npos) << e.what();
  }
}

TEST(Backend, RowOpsHonourTheirStrides) {
  Backend<float>& be = BackendFor<float>(Device::kCpu);
  // x (3, 2) inside rows of stride 5.
  const std::vector<float> x = {1, 2, 9, 9, 9, 3, 4, 9, 9, 9, 5, 6, 9, 9, 9};
  std::vector<float> y(6, 1.0f);
  be.AddRows(3, 2, x.data(), 5, y.data());
  EXPECT_EQ(y, (std::vector<float>{2, 3, 4, 5, 6, 7}));
  std::vector<float> sums = {10, 20};
  be.AddColumnSums(3, 2, y.data(), sums.data());
  EXPECT_EQ(sums, (std::vector<float>{22, 35}));
  std::vector<float> b(6, 0.0f);
  be.BroadcastRows(3, 2, sums.data(), b.data());
  EXPECT_EQ(b, (std::vector<float>{22, 35, 22, 35, 22, 35}));
  EXPECT_DOUBLE_EQ(be.SumSquares(2, sums.data()), 22.0 * 22.0 + 35.0 * 35.0);
}

TEST(Backend, RepeatAndItsAdjoint) {
  Backend<double>& be = BackendFor<double>(Device::kCpu);
  const std::vector<double> x = {1, 2, 3, 4};  // (B=2, H=2)
  std::vector<double> y(12);                   // (2, 3, 2)
  be.Repeat(2, 3, 2, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<double>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}));
  std::vector<double> dx(4, -1.0);
  be.RepeatGrad(2, 3, 2, y.data(), dx.data());
  EXPECT_EQ(dx, (std::vector<double>{3, 6, 9, 12}));
}

}  // namespace backend_test
}  // namespace shardflow
