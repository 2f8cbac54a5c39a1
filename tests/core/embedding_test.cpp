// Embedding layer (core/layers/embedding.hpp): the output layout (columns around the index,
// table row in its place), gradients against central differences (table and the non-index
// inputs; the index column's gradient is 0), bad indices named, and the spec grammar.
#include <gtest/gtest.h>

#include <cmath>

#include "core/arena.hpp"
#include "core/init.hpp"
#include "core/model.hpp"

namespace shardflow {
namespace embedding_test {

struct Built {
  Arena<double> arena;
  std::unique_ptr<Layer<double>> layer;
  Shape out;
  explicit Built(const std::string& spec, const Shape& in) {
    layer = MakeLayerFromSpec<double>(spec, in, {});
    BuildContext<double> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_embedding"};
    out = layer->Build(in, ctx);
    arena.Allocate();
    layer->Initialize(3);
  }
};

// Rows of (a, index, b, c) with the given indices.
Tensor Input(const std::vector<double>& indices) {
  Tensor x(DType::kFloat64, {static_cast<int64_t>(indices.size()), 4});
  double* p = x.data<double>();
  for (size_t r = 0; r < indices.size(); ++r) {
    p[4 * r] = 0.5 + static_cast<double>(r);
    p[4 * r + 1] = indices[r];
    p[4 * r + 2] = -1.0 - static_cast<double>(r);
    p[4 * r + 3] = 0.25 * static_cast<double>(r);
  }
  return x;
}

TEST(Embedding, ReplacesTheIndexColumnByItsTableRow) {
  Built b("embedding:5:3:1", {4});
  EXPECT_EQ(b.out, (Shape{6}));
  EXPECT_EQ(b.layer->Describe(), "embedding:5:3:1");
  const Tensor x = Input({2, 4, 0});
  const Tensor y = b.layer->Forward(x, {});
  ASSERT_EQ(y.shape(), (Shape{3, 6}));
  const double* table = b.arena.params();
  for (int64_t r = 0; r < 3; ++r) {
    const double* row = y.data<double>() + 6 * r;
    const int64_t i = static_cast<int64_t>(x.data<double>()[4 * r + 1]);
    EXPECT_EQ(row[0], x.data<double>()[4 * r]);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(row[1 + k], table[i * 3 + k]);
    EXPECT_EQ(row[4], x.data<double>()[4 * r + 2]);
    EXPECT_EQ(row[5], x.data<double>()[4 * r + 3]);
  }
}

TEST(Embedding, GradientsMatchCentralDifferences) {
  Built b("embedding:5:3:1", {4});
  Tensor x = Input({2, 4, 2});  // index 2 twice: its gradient row sums two rows of dy
  Tensor r(DType::kFloat64, {3, 6});
  for (int64_t i = 0; i < r.num_elements(); ++i) r.data<double>()[i] = std::sin(1.0 + i);
  auto objective = [&] {
    const Tensor y = b.layer->Forward(x, {});
    double s = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) s += y.data<double>()[i] * r.data<double>()[i];
    return s;
  };
  objective();
  b.arena.ZeroGrads();
  const Tensor dx = b.layer->Backward(r, true).Clone();
  const std::vector<double> grads(b.arena.grads(), b.arena.grads() + b.arena.size());
  const double eps = 1e-6;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (i % 4 == 1) {
      EXPECT_EQ(dx.data<double>()[i], 0.0) << "the index column has no gradient";
      continue;
    }
    double& v = x.data<double>()[i];
    const double keep = v;
    v = keep + eps;
    const double up = objective();
    v = keep - eps;
    const double down = objective();
    v = keep;
    EXPECT_NEAR(dx.data<double>()[i], (up - down) / (2 * eps), 1e-6) << "dx[" << i << "]";
  }
  double* w = b.arena.params();
  for (int64_t i = 0; i < b.arena.size(); ++i) {
    const double keep = w[i];
    w[i] = keep + eps;
    const double up = objective();
    w[i] = keep - eps;
    const double down = objective();
    w[i] = keep;
    EXPECT_NEAR(grads[i], (up - down) / (2 * eps), 1e-6) << "dtable[" << i << "]";
  }
  EXPECT_EQ(grads[0], 0.0);  // row 0 was not used
}

TEST(Embedding, BadIndicesAndSpecsAreNamed) {
  Built b("embedding:5:3:1", {4});
  for (double bad : {2.5, 5.0, -1.0}) {
    try {
      b.layer->Forward(Input({1, bad}), {});
      ADD_FAILURE() << "no error for index " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("embedding:5:3:1: row 1 holds"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(Built("embedding:5:3:4", {4}), Error);  // no column 4 in a width-4 input
  EXPECT_THROW(Built("embedding:0:3:1", {4}), Error);
  EXPECT_THROW(Built("embedding:5:3", {4}), Error);
}

}  // namespace embedding_test
}  // namespace shardflow
