// The four split layers (dense and conv, column- and row-parallel) against central finite
// differences in double precision, two ways on two threads with a fake all-reduce; and every
// spec a tensor-parallel model refuses to build, with one clear error naming the layer.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "core/arena.hpp"
#include "core/model.hpp"
#include "core/random.hpp"
#include "fake_tensor_group.hpp"

namespace shardflow {
namespace tensor_parallel_layer_test {

using testing_tp::FakeTensorGroup;
using testing_tp::RunWays;

void FillNormal(Tensor& t, uint64_t seed) {
  double* p = t.data<double>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = RandomNormal(seed, 0, i);
}

// The numeric and analytic derivatives one way saw, in check order.
struct Derivatives {
  std::vector<double> analytic, numeric;
  std::vector<std::string> what;
};

// One way of a split layer: input `in` is the way's (a row layer's: its slice of the channels).
// L = SUM over ways of sum(y_way * r_way) for a column layer (its outputs are slices) and
// sum(y * r) for a row layer (its output is whole, the same on every way). Each derivative is
// checked by perturbing one value on its owning way (a replicated input or parameter on every
// way).
void CheckWay(const std::string& spec, const Shape& in, const TensorParallel& tp, bool column,
              Derivatives* out) {
  Arena<double> arena;
  auto layer = MakeLayerFromSpec<double>(spec, in, {});
  BuildContext<double> ctx{.arena = &arena,
                           .layer_index = 0,
                           .layer_name = "00_test",
                           .tp = &tp,
                           .input_split = !column};
  const Shape out_shape = layer->Build(in, ctx);
  arena.Allocate();
  layer->Initialize(3);
  // Nudged off zero; a replicated parameter (a row layer's bias) alike on every way.
  for (const ParamSpec& s : arena.specs()) {
    for (int64_t i = s.offset; i < s.offset + s.size; ++i) {
      arena.params()[i] += 0.1 * RandomNormal(9, s.split_axis < 0 ? 99 : tp.way, i);
    }
  }
  Tensor x(DType::kFloat64, WithBatch(2, in));
  FillNormal(x, column ? 21 : 30 + tp.way);  // a column layer's input is replicated
  Tensor r(DType::kFloat64, WithBatch(2, out_shape));
  FillNormal(r, column ? 40 + tp.way : 22);
  const ForwardContext fctx{.training = false};
  auto objective = [&]() {
    const Tensor y = layer->Forward(x, fctx);
    double s = 0.0;
    for (int64_t i = 0; i < y.num_elements(); ++i) s += y.data<double>()[i] * r.data<double>()[i];
    if (column) TpSum(&tp, &s, 1);
    return s;
  };
  objective();
  arena.ZeroGrads();
  const Tensor dx = layer->Backward(r, true).Clone();
  const std::vector<double> grads(arena.grads(), arena.grads() + arena.size());
  const double eps = 1e-5;
  auto check = [&](double* v, double analytic, bool mine, const std::string& what) {
    const double keep = *v;
    if (mine) *v = keep + eps;
    const double up = objective();
    if (mine) *v = keep - eps;
    const double down = objective();
    *v = keep;
    if (!mine) return;
    out->analytic.push_back(analytic);
    out->numeric.push_back((up - down) / (2 * eps));
    out->what.push_back(what);
  };
  for (int owner = 0; owner < tp.ways; ++owner) {
    const bool mine = owner == tp.way;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      check(&x.data<double>()[i], dx.data<double>()[i], column || mine,
            "dx[" + std::to_string(i) + "]");
    }
    // A replicated parameter (a row layer's bias) is the same on every way: perturbed on all.
    for (const ParamSpec& s : arena.specs()) {
      for (int64_t i = s.offset; i < s.offset + s.size; ++i) {
        check(&arena.params()[i], grads[i], mine || s.split_axis < 0,
              s.name + "[" + std::to_string(i - s.offset) + "]");
      }
    }
  }
}

void CheckSplitLayer(const std::string& spec, const Shape& in, bool column) {
  SCOPED_TRACE(spec);
  const int ways = 2;
  FakeTensorGroup group(ways);
  std::vector<Derivatives> d(ways);
  RunWays(ways, [&](int way) { CheckWay(spec, in, group.Way(way), column, &d[way]); });
  for (int way = 0; way < ways; ++way) {
    ASSERT_FALSE(d[way].analytic.empty());
    for (size_t i = 0; i < d[way].analytic.size(); ++i) {
      const double a = d[way].analytic[i], n = d[way].numeric[i];
      EXPECT_NEAR(a, n, 1e-7 + 1e-5 * std::max(std::abs(a), std::abs(n)))
          << "way " << way << " " << d[way].what[i];
    }
  }
}

TEST(TensorParallelGradient, DenseColumn) { CheckSplitLayer("dense:6:col", {2, 5}, true); }
TEST(TensorParallelGradient, DenseRow) { CheckSplitLayer("dense:3:row", {4}, false); }
TEST(TensorParallelGradient, ConvColumn) {
  CheckSplitLayer("conv:4:3x3:same:col", {5, 4, 3}, true);
}
TEST(TensorParallelGradient, ConvRow) { CheckSplitLayer("conv:3:3x2:valid:row", {5, 4, 2}, false); }

// Builds way 0 of `ways` and returns the error, or "" when it builds.
std::string BuildError(const std::string& spec, const Shape& in, int ways, bool with_sum = true) {
  ModelOptions o;
  o.tensor_parallel.ways = ways;
  if (with_sum) o.tensor_parallel.sum_float = [](float*, int64_t) {};
  try {
    Sequential<float> m(spec, in, o);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    EXPECT_EQ(e.context().key, "dist.tensor_parallel") << e.what();
    return e.what();
  }
  return "";
}

void ExpectRefused(const std::string& spec, const Shape& in, int ways,
                   const std::vector<std::string>& mentions) {
  const std::string error = BuildError(spec, in, ways);
  ASSERT_FALSE(error.empty()) << spec << " was not refused";
  for (const std::string& m : mentions) {
    EXPECT_NE(error.find(m), std::string::npos) << "'" << m << "' not in: " << error;
  }
}

TEST(TensorParallelRefusal, UnitsNotDivisible) {
  ExpectRefused("flatten, dense:10:col, relu, dense:4:row", {6}, 4,
                {"01_dense", "10 units", "T = 4"});
}
TEST(TensorParallelRefusal, FiltersNotDivisible) {
  ExpectRefused("conv:6:3x3:col, conv:4:3x3:row", {5, 5, 1}, 4,
                {"00_conv2d", "6 filters", "T = 4"});
}
TEST(TensorParallelRefusal, RowAfterAnUnsplitLayer) {
  ExpectRefused("flatten, dense:8, dense:4:row", {6}, 2, {"02_dense", "[8]", "T = 2"});
  ExpectRefused("dense:4:row", {6}, 1, {"00_dense", "[6]", "T = 1"});
}
TEST(TensorParallelRefusal, ColumnOnASlice) {
  ExpectRefused("flatten, dense:8:col, dense:4:col, dense:2:row", {6}, 2,
                {"02_dense", "[4]", "T = 2"});
}
TEST(TensorParallelRefusal, SliceReachesFlatten) {
  ExpectRefused("conv:8:3x3:col, relu, flatten, dense:4", {5, 5, 1}, 2,
                {"02_flatten", "[5,5,4]", "T = 2"});
}
TEST(TensorParallelRefusal, SliceReachesUnsplitLayers) {
  ExpectRefused("flatten, dense:8:col, relu, dense:4", {6}, 2, {"03_dense", "[4]", "T = 2"});
  ExpectRefused("conv:8:3x3:col, conv:4:3x3", {5, 5, 1}, 2, {"01_conv2d", "T = 2"});
  ExpectRefused("conv:8:3x3:col, batchnorm, conv:4:3x3:row", {5, 5, 1}, 2,
                {"01_batchnorm", "T = 2"});
}
TEST(TensorParallelRefusal, SliceReachesTheOutput) {
  ExpectRefused("flatten, dense:8:col, relu", {6}, 2, {"output", "[4]", "T = 2"});
}
TEST(TensorParallelRefusal, BadWayOrMissingSum) {
  ModelOptions o;
  o.tensor_parallel.way = 2;
  o.tensor_parallel.ways = 2;
  o.tensor_parallel.sum_float = [](float*, int64_t) {};
  EXPECT_THROW(Sequential<float>("mlp", {4}, o), Error);
  EXPECT_NE(BuildError("mlp", {4}, 2, /*with_sum=*/false).find("sum_float"), std::string::npos);
}
TEST(TensorParallelRefusal, BadMarker) {
  EXPECT_THROW(Sequential<float>("flatten, dense:8:cols", {4}), Error);
  EXPECT_THROW(Sequential<float>("conv:8:3x3:col:same", {4, 4, 1}), Error);
}
// The same specs build whole and split when they are valid (the refusals are not blanket).
TEST(TensorParallelRefusal, ValidSpecsBuild) {
  EXPECT_EQ(BuildError("flatten, dense:8:col, relu, dense:4:row", {6}, 2), "");
  EXPECT_EQ(BuildError("conv:8:3x3:col, relu, maxpool:2, conv:4:3x3:row", {5, 5, 1}, 2), "");
  EXPECT_EQ(BuildError("lstm_autoencoder", {5, 3}, 4), "");
}

}  // namespace tensor_parallel_layer_test
}  // namespace shardflow
