// Embedding bag layer (core/layers/embedding_bag.hpp): the output layout (columns around the
// bags, each bag the combination of its rows), the three combiners, empty slots and empty bags,
// gradients against central differences (table and the other columns; slots have none), ids
// out of range named, the bag grammar, and a remote table's window (parameter servers).
#include <gtest/gtest.h>

#include <cmath>

#include "core/arena.hpp"
#include "core/layers/embedding_bag.hpp"
#include "core/model.hpp"

namespace shardflow {
namespace embedding_bag_test {

struct Built {
  Arena<double> arena;
  std::unique_ptr<Layer<double>> layer;
  Shape out;
  Built(const std::string& spec, const Shape& in) {
    layer = MakeLayerFromSpec<double>(spec, in, {});
    BuildContext<double> ctx{.arena = &arena, .layer_index = 0, .layer_name = "00_embedbag"};
    out = layer->Build(in, ctx);
    arena.Allocate();
    layer->Initialize(5);
  }
  const double* Row(int64_t id) const { return arena.params() + id * 3; }
};

// Rows of (a, id, id, id, id, b): a single-id bag then a list of three (slots 1..4).
Tensor Input(const std::vector<std::vector<double>>& ids) {
  Tensor x(DType::kFloat64, {static_cast<int64_t>(ids.size()), 6});
  double* p = x.data<double>();
  for (size_t r = 0; r < ids.size(); ++r) {
    p[6 * r] = 0.5 + static_cast<double>(r);
    for (size_t k = 0; k < 4; ++k) p[6 * r + 1 + k] = ids[r][k];
    p[6 * r + 5] = -1.5 - static_cast<double>(r);
  }
  return x;
}

TEST(EmbeddingBag, CombinesEachBagsRowsAroundTheOtherColumns) {
  for (const std::string combiner : {"sum", "mean", "sqrtn"}) {
    Built b("embedbag:7:3:1:1+1x3:" + combiner, {6});
    EXPECT_EQ(b.out, (Shape{8}));
    const std::string plain = "embedbag:7:3:1:1+1x3";
    EXPECT_EQ(b.layer->Describe(), combiner == "sum" ? plain : plain + ":" + combiner);
    const Tensor x = Input({{2, 4, 6, 4}, {-1, 0, -1, -1}, {3, -1, -1, -1}});
    const Tensor y = b.layer->Forward(x, {});
    ASSERT_EQ(y.shape(), (Shape{3, 8}));
    const double* p = y.data<double>();
    // Sample 0: bag 0 = row 2; bag 1 = rows 4, 6, 4 (a repeated id counts twice).
    const double n = 3, scale = combiner == "sum"    ? 1
                                : combiner == "mean" ? 1 / n
                                                     : 1 / std::sqrt(n);
    for (int k = 0; k < 3; ++k) {
      EXPECT_DOUBLE_EQ(p[1 + k], b.Row(2)[k]);
      EXPECT_NEAR(p[4 + k], scale * (2 * b.Row(4)[k] + b.Row(6)[k]), 1e-15);
    }
    EXPECT_EQ(p[0], 0.5);
    EXPECT_EQ(p[7], -1.5);
    // Sample 1: an empty first bag is zeros; a one-id bag is its row under every combiner.
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(p[8 + 1 + k], 0.0);
      EXPECT_DOUBLE_EQ(p[8 + 4 + k], b.Row(0)[k]);
    }
    // Sample 2: an empty list.
    for (int k = 0; k < 3; ++k) EXPECT_EQ(p[16 + 4 + k], 0.0);
  }
}

TEST(EmbeddingBag, GradientsMatchCentralDifferences) {
  for (const std::string combiner : {"sum", "mean", "sqrtn"}) {
    Built b("embedbag:7:3:1:1+1x3:" + combiner, {6});
    Tensor x = Input({{2, 4, 6, 4}, {-1, 2, -1, 5}, {6, -1, -1, -1}});
    Tensor r(DType::kFloat64, {3, 8});
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
      if (i % 6 >= 1 && i % 6 <= 4) {
        EXPECT_EQ(dx.data<double>()[i], 0.0) << "a slot has no gradient";
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
      EXPECT_NEAR(grads[i], (up - down) / (2 * eps), 1e-6) << combiner << " dtable[" << i << "]";
    }
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(grads[1 * 3 + k], 0.0) << "row 1 was not used";
      EXPECT_EQ(grads[3 * 3 + k], 0.0) << "row 3 was not used";
    }
  }
}

// Remote tables (core/layers/remote_table.hpp): built with remote_tables the layer holds no
// rows (an empty slice of the whole table) and computes with the window its holder fills: the
// same output and the same gradient rows as the whole table, rows drawn as Initialize draws
// them, and an id outside the window refused.
TEST(EmbeddingBag, ARemoteTableComputesWithItsWindowAsTheWholeTable) {
  for (const std::string spec : {"embedbag:7:3:1:1+1x3:mean", "wide:7:3:1:4"}) {
    Built whole(spec, {6});
    Arena<double> arena;
    std::unique_ptr<Layer<double>> layer = MakeLayerFromSpec<double>(spec, {6}, {});
    BuildContext<double> ctx{
        .arena = &arena, .layer_index = 0, .layer_name = "00_embedbag", .remote_tables = true};
    EXPECT_EQ(layer->Build({6}, ctx), whole.out);
    arena.Allocate();
    layer->Initialize(5);
    const ParamSpec& table = arena.specs().at(0);
    EXPECT_EQ(table.shape, (Shape{0, 3})) << spec;
    EXPECT_EQ(table.FullShape(), (Shape{7, 3})) << spec;
    RemoteTable<double>* remote = layer->remote_table();
    ASSERT_NE(remote, nullptr) << spec;
    EXPECT_EQ(whole.layer->remote_table(), nullptr);
    const Tensor x = Input({{2, 4, 6, 4}, {-1, 0, -1, -1}, {3, -1, -1, 6}});
    const std::vector<int64_t> ids = remote->BatchIds(x);
    EXPECT_EQ(ids, (std::vector<int64_t>{0, 2, 3, 4, 6})) << spec;
    double* rows = remote->SetWindow(ids);
    for (size_t i = 0; i < ids.size(); ++i) {
      remote->InitialRow(ids[i], rows + 3 * i);
      for (int k = 0; k < 3; ++k) EXPECT_EQ(rows[3 * i + k], whole.Row(ids[i])[k]) << spec;
    }
    const Tensor y = layer->Forward(x, {}), y_whole = whole.layer->Forward(x, {});
    ASSERT_EQ(y.shape(), y_whole.shape());
    for (int64_t i = 0; i < y.num_elements(); ++i) {
      EXPECT_EQ(y.data<double>()[i], y_whole.data<double>()[i]) << spec << " output " << i;
    }
    Tensor dy(DType::kFloat64, y.shape());
    for (int64_t i = 0; i < dy.num_elements(); ++i) dy.data<double>()[i] = 0.1 * (i % 7) - 0.3;
    layer->Backward(dy, false);
    whole.arena.ZeroGrads();
    whole.layer->Backward(dy, false);
    for (size_t i = 0; i < ids.size(); ++i) {
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(remote->window_grads()[3 * i + k], whole.arena.grads()[ids[i] * 3 + k])
            << spec << " id " << ids[i];
      }
    }
    remote->SetWindow({0, 2});  // ids 3, 4 and 6 are not in it
    EXPECT_THROW(layer->Forward(x, {}), Error) << spec;
  }
}

TEST(EmbeddingBag, BadIdsAndSpecsAreNamed) {
  Built b("embedbag:7:3:1:1+1x3", {6});
  for (double bad : {2.5, 7.0, -2.0}) {
    try {
      b.layer->Forward(Input({{1, 2, -1, -1}, {1, 2, bad, -1}}), {});
      ADD_FAILURE() << "no error for id " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("embedbag:7:3:1:1+1x3: sample 1 holds"),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("in slot 2 (column 3)"), std::string::npos) << e.what();
    }
  }
  std::vector<int64_t> criteo(26, 1);
  criteo.push_back(8);
  EXPECT_EQ(ParseBags("26+1x8", "t"), criteo);
  EXPECT_EQ(BagsText(ParseBags("2+3x4+1", "t")), "2+3x4+1");
  for (const char* spec : {"embedbag:7:3:2:1+1x4", "embedbag:7:3:1", "embedbag:7:3:1:1+",
                           "embedbag:7:3:1:0", "embedbag:7:3:1:1x0", "embedbag:7:3:1:1:max",
                           "embedbag:16777217:3:1:1", "embedbag:7:0:1:1"}) {
    EXPECT_THROW(Built(spec, {6}), Error) << spec;
  }
}

// A wide-and-deep model: the wide part adds the sum of its table's rows for every id to the
// deep layers' output; gradients of both parts against central differences.
TEST(EmbeddingBag, WideAndDeepAddsALinearModelOfTheIds) {
  const std::string deep = "embedbag:7:3:1:1+1x3:mean, dense:2";
  Sequential<double> model(deep + ", wide:7:2:1:4", {6});
  Sequential<double> alone(deep, {6});
  EXPECT_EQ(model.output_shape(), (Shape{2}));
  EXPECT_EQ(model.spec(), "embedbag:7:3:1:1+1x3:mean, dense:2, wide:7:2:1:4");
  const Tensor x = Input({{2, 4, 6, 4}, {-1, 2, -1, 5}, {6, -1, -1, -1}});
  // The wide table starts at zero: the same output as the deep part alone.
  const Tensor y0 = model.Forward(x, false).Clone();
  const Tensor d0 = alone.Forward(x, false);
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(y0.data<double>()[i], d0.data<double>()[i]);
  double* w = model.arena().params();
  const ParamSpec& wide = model.arena().specs().back();
  ASSERT_EQ(wide.FullName(), "02_wide/table");
  for (int64_t i = 0; i < wide.size; ++i) w[wide.offset + i] = 0.1 * static_cast<double>(i + 1);
  const Tensor y = model.Forward(x, false);
  // Sample 2 has one id (6): its wide term is table row 6 = (1.3, 1.4).
  EXPECT_NEAR(y.data<double>()[4] - y0.data<double>()[4], 1.3, 1e-12);
  EXPECT_NEAR(y.data<double>()[5] - y0.data<double>()[5], 1.4, 1e-12);
  Tensor r(DType::kFloat64, {3, 2});
  for (int64_t i = 0; i < 6; ++i) r.data<double>()[i] = std::cos(0.5 + i);
  auto objective = [&] {
    const Tensor out = model.Forward(x, false);
    double s = 0;
    for (int64_t i = 0; i < 6; ++i) s += out.data<double>()[i] * r.data<double>()[i];
    return s;
  };
  objective();
  model.arena().ZeroGrads();
  model.Backward(r);
  const std::vector<double> grads(model.arena().grads(),
                                  model.arena().grads() + model.arena().size());
  const double eps = 1e-6;
  for (int64_t i = 0; i < model.arena().size(); ++i) {
    const double keep = w[i];
    w[i] = keep + eps;
    const double up = objective();
    w[i] = keep - eps;
    const double down = objective();
    w[i] = keep;
    EXPECT_NEAR(grads[i], (up - down) / (2 * eps), 1e-6) << "parameter " << i;
  }
  for (const char* spec : {"wide:7:2:1:4", "wide:7:2:1:4, dense:2", "dense:3, wide:7:2:1:4",
                           "dense:2, wide:7:2:3:4"}) {
    EXPECT_THROW(Sequential<double>(spec, {6}), Error) << spec;
  }
}

}  // namespace embedding_bag_test
}  // namespace shardflow
