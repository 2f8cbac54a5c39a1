// The host twin's reductions against the CPU backend (see host_twin_test.cpp for what the twin
// tests cover; this file is compiled into the GPU suite too): column sums and batch
// normalisation, whose sums over rows run in fixed row blocks on both sides, a device summing
// the blocks in parallel. Inputs that make the order visible (a huge value and its negation far
// apart, with ones between them) check that both sides sum in the documented order, not just in
// the same one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/backend/kernels/reductions.hpp"
#include "tests/core/host_twin_support.hpp"

namespace shardflow {
namespace host_twin_reductions_test {

using namespace twin_testing;  // NOLINT(google-build-using-namespace): the shared helpers

// The definition of AddColumnSums: sums[j] plus each block of kColumnSumRowBlock rows summed
// from zero, rows in order, the blocks added in order.
std::vector<float> ColumnSumsByDefinition(int64_t rows, int64_t cols, const std::vector<float>& x,
                                          std::vector<float> sums) {
  const int64_t block = kernels::kColumnSumRowBlock;
  for (int64_t j = 0; j < cols; ++j) {
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      float s = 0.0f;
      for (int64_t r = r0; r < std::min(rows, r0 + block); ++r) s += x[r * cols + j];
      sums[j] += s;
    }
  }
  return sums;
}

TEST_F(HostTwin, ColumnSumsInRowBlocks) {
  Both b;
  // 0 and 1 rows, one block, a block and one row, several blocks with a partial last one; one
  // column, a tile of 64 and more than one tile.
  for (int64_t rows :
       {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{256}, int64_t{257}, int64_t{1000}}) {
    for (int64_t cols : {int64_t{1}, int64_t{64}, int64_t{70}}) {
      auto x = Random<float>(rows * cols, 31);
      if (rows == 1000) {  // column 0: ones, +2^30 at row 0, -2^30 at row 300. In float the
        // big terms swallow ones: in blocks of 256 the sum is 552 (a start of 0.5), in one
        // pass 699. Only the blocked order gives the definition's bits.
        for (int64_t r = 0; r < rows; ++r) x[r * cols] = 1.0f;
        x[0] = std::ldexp(1.0f, 30);
        x[300 * cols] = -std::ldexp(1.0f, 30);
      }
      const std::vector<float> start = Random<float>(cols, 32);
      std::vector<float> s1 = start, s2 = start;
      b.cpu.AddColumnSums(rows, cols, x.data(), s1.data());
      b.twin.AddColumnSums(rows, cols, x.data(), s2.data());
      const std::vector<float> want = ColumnSumsByDefinition(rows, cols, x, start);
      EXPECT_TWIN(s1, want, 0.0) << rows << " x " << cols;
      EXPECT_TWIN(s2, want, kExact) << rows << " x " << cols;
    }
  }
}

TEST_F(HostTwin, BatchNormTrainingAndInference) {
  Both b;
  // 2500 rows: three row blocks of the sums, the last one partial; 16 channels: the CPU's
  // fixed-width loops.
  for (auto [n, c] : {std::pair<int64_t, int64_t>{1, 6}, {2, 6}, {37, 6}, {2500, 6}, {2500, 16}}) {
    for (bool training : {true, false}) {
      const BatchNormParams p{.n = n, .c = c, .training = training};
      auto x = Random<float>(n * c, 22, -2, 3), dy = Random<float>(n * c, 25);
      const auto gamma = Random<float>(c, 23), beta = Random<float>(c, 24);
      if (n > 1030) {  // channel 0: ones, +2^60 at row 0, -2^60 at row 1030. In double the
        // big terms swallow every 1 summed after them, so the sum is 452 in row blocks of 1024,
        // 1469 in one sequential pass: the twin must take the CPU's order to give its bits.
        for (int64_t r = 0; r < n; ++r) x[r * c] = dy[r * c] = 1.0f;
        x[0] = dy[0] = std::ldexp(1.0f, 60);
        x[1030 * c] = dy[1030 * c] = -std::ldexp(1.0f, 60);
      }
      std::vector<float> mm1 = Random<float>(c, 26), mv1 = Random<float>(c, 27, 0.5, 2.0);
      std::vector<float> mm2 = mm1, mv2 = mv1;
      std::vector<double> sv1(kBatchNormSavedPerChannel * c), sv2(sv1.size());
      std::vector<float> y1(n * c), y2(n * c);
      b.cpu.BatchNorm(p, x.data(), gamma.data(), beta.data(), mm1.data(), mv1.data(), sv1.data(),
                      y1.data());
      b.twin.BatchNorm(p, x.data(), gamma.data(), beta.data(), mm2.data(), mv2.data(), sv2.data(),
                       y2.data());
      EXPECT_TWIN(mm2, mm1, kExact);
      EXPECT_TWIN(mv2, mv1, kExact);
      EXPECT_TWIN(sv2, sv1, kExact);  // mean and inv_std
      EXPECT_TWIN(y2, y1, kFloatTol);
      std::vector<float> dg1 = Random<float>(c, 28), db1 = Random<float>(c, 29);
      std::vector<float> dg2 = dg1, db2 = db1, dx1(n * c), dx2(n * c);
      b.cpu.BatchNormGrad(p, dy.data(), x.data(), gamma.data(), sv1.data(), dg1.data(), db1.data(),
                          dx1.data());
      b.twin.BatchNormGrad(p, dy.data(), x.data(), gamma.data(), sv2.data(), dg2.data(), db2.data(),
                           dx2.data());
      EXPECT_TWIN(dg2, dg1, kFloatTol);
      EXPECT_TWIN(db2, db1, kFloatTol);
      EXPECT_TWIN(dx2, dx1, kFloatTol);
      // Without dx (the first layer): only the parameter gradients.
      b.twin.BatchNormGrad(p, dy.data(), x.data(), gamma.data(), sv2.data(), dg2.data(), db2.data(),
                           nullptr);
    }
  }
}

}  // namespace host_twin_reductions_test
}  // namespace shardflow
