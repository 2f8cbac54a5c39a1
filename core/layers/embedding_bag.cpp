#include "core/layers/embedding_bag.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "core/backend/device_runtime.hpp"
#include "core/init.hpp"

namespace shardflow {

std::vector<int64_t> ParseBags(const std::string& text, const std::string& token) {
  auto bad = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument,
                 "bad layer '" + token + "': bags '" + text + "' " + why,
                 {.key = "model", .hint = "bags as F or FxL terms joined by '+', e.g. 26+1x8"});
  };
  auto number = [&](std::string_view s) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || v <= 0 || v > (1 << 20)) {
      throw bad("needs positive counts, found '" + std::string(s) + "'");
    }
    return v;
  };
  std::vector<int64_t> bags;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t plus = std::min(text.find('+', begin), text.size());
    const std::string_view term(text.data() + begin, plus - begin);
    const size_t x = term.find('x');
    const int64_t count = number(term.substr(0, x));
    const int64_t slots = x == std::string_view::npos ? 1 : number(term.substr(x + 1));
    if (bags.size() + static_cast<size_t>(count) > (1 << 20)) throw bad("lists too many bags");
    bags.insert(bags.end(), static_cast<size_t>(count), slots);
    begin = plus + 1;
  }
  return bags;
}

std::string BagsText(const std::vector<int64_t>& bag_slots) {
  std::string t;
  for (size_t i = 0; i < bag_slots.size();) {
    size_t j = i;
    while (j < bag_slots.size() && bag_slots[j] == bag_slots[i]) ++j;
    if (!t.empty()) t += "+";
    t += std::to_string(j - i);
    if (bag_slots[i] != 1) {
      t += 'x';  // not "x" + to_string: GCC 12's false -Wrestrict
      t += std::to_string(bag_slots[i]);
    }
    i = j;
  }
  return t;
}

namespace {

const char* CombinerName(BagCombiner c) {
  switch (c) {
    case BagCombiner::kSum:
      return "sum";
    case BagCombiner::kMean:
      return "mean";
    case BagCombiner::kSqrtN:
      return "sqrtn";
  }
  return "?";
}

template <typename T>
class EmbeddingBag final : public Layer<T>, public RemoteTable<T> {
 public:
  explicit EmbeddingBag(const EmbeddingBagOptions& o) : o_(o) {
    for (int64_t s : o.bag_slots) slots_ += s;
    if (o.rows <= 0 || o.rows > kMaxEmbeddingBagRows || o.dim <= 0 || o.at < 0 ||
        o.bag_slots.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "embedbag needs 0 < N <= 2^24 rows (ids travel as float32 integers), D > 0, a "
                  "column >= 0 and bags, got " +
                      Describe(),
                  {.key = "model"});
    }
  }
  std::string kind() const override { return o_.wide ? "wide" : "embedbag"; }
  std::string Describe() const override {
    if (o_.wide) {
      return "wide:" + std::to_string(o_.rows) + ":" + std::to_string(o_.dim) + ":" +
             std::to_string(o_.at) + ":" + std::to_string(slots_);
    }
    std::string d = "embedbag:" + std::to_string(o_.rows) + ":" + std::to_string(o_.dim) + ":" +
                    std::to_string(o_.at) + ":" + BagsText(o_.bag_slots);
    if (o_.combiner != BagCombiner::kSum) d += std::string(":") + CombinerName(o_.combiner);
    return d;
  }

  Shape Build(const Shape& in, BuildContext<T>& ctx) override {
    if (in.size() != 1 || in[0] < o_.at + slots_) {
      throw Error(ErrorCode::kInvalidArgument,
                  Describe() + " needs a flat input with slots [" + std::to_string(o_.at) + ", " +
                      std::to_string(o_.at + slots_) + "), got " + ShapeToString(in),
                  {.key = "model"});
    }
    w_ = in[0];
    arena_ = ctx.arena;
    // Remote: no rows here (a window of them, remote_table.hpp), declared as an empty slice of
    // the whole table so checkpoints and loads see the table's real shape.
    remote_ = ctx.remote_tables;
    table_ = remote_ ? ctx.DeclareSlice("table", {o_.rows, o_.dim}, 0,
                                        TpSlice{.begin = 0, .size = 0, .full = o_.rows}, false)
                     : ctx.Declare("table", {o_.rows, o_.dim}, /*decay=*/false);
    return {o_.wide ? o_.dim : OutWidth()};
  }

  void Initialize(uint64_t seed) override {
    seed_ = seed;
    stream_ = arena_->init_stream(table_);
    if (remote_) return;  // the holder's rows start as InitialRow says
    if (o_.wide) {        // a linear model starts at zero, as tf.keras' LinearModel
      InitConstant(arena_->param(table_), o_.rows * o_.dim, T(0));
      return;
    }
    BackendFor<T>(arena_->device())
        .FillNormal(o_.rows * o_.dim, 1.0 / std::sqrt(static_cast<double>(o_.dim)), seed,
                    arena_->init_stream(table_), arena_->param(table_));
  }

  std::unique_ptr<LayerState> NewState() const override { return std::make_unique<State>(); }

  RemoteTable<T>* remote_table() override { return remote_ ? this : nullptr; }
  std::string table_spec() const override { return Describe(); }
  int64_t rows() const override { return o_.rows; }
  int64_t dim() const override { return o_.dim; }
  // Row `id` as Initialize fills the whole table: its slice of the table's draws.
  void InitialRow(int64_t id, T* out) const override {
    if (o_.wide) {
      std::fill(out, out + o_.dim, T(0));
      return;
    }
    BackendFor<T>(Device::kCpu)
        .FillNormalSlice({.outer = 1, .full = o_.rows, .begin = id, .size = 1, .inner = o_.dim},
                         1.0 / std::sqrt(static_cast<double>(o_.dim)), seed_, stream_, out);
  }
  std::vector<int64_t> BatchIds(const Tensor& x) const override {
    const int64_t b = CheckInput(x, {w_}, "embedbag");
    CheckHostTensor(x, "embedbag");
    const T* xp = x.template data<T>();
    std::vector<int64_t> ids;
    ids.reserve(static_cast<size_t>(b * slots_));
    for (int64_t r = 0; r < b; ++r) {
      for (int64_t slot = 0; slot < slots_; ++slot) {
        const int64_t id = Id(xp[r * w_ + o_.at + slot], r, slot);
        if (id >= 0) ids.push_back(id);
      }
    }
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return ids;
  }
  T* SetWindow(std::vector<int64_t> ids) override {
    window_ids_ = std::move(ids);
    const size_t n = window_ids_.size() * static_cast<size_t>(o_.dim);
    window_rows_.resize(n);
    window_grads_.assign(n, T(0));
    return window_rows_.data();
  }
  const std::vector<int64_t>& window_ids() const override { return window_ids_; }
  T* window_rows() override { return window_rows_.data(); }
  const T* window_grads() const override { return window_grads_.data(); }

 protected:
  Tensor DoForward(const Tensor& x, const ForwardContext&, LayerState& st) override {
    const int64_t b = CheckInput(x, {w_}, "embedbag");
    CheckHostTensor(x, "embedbag");
    State& s = StateAs<State>(st, "embedbag");
    const int64_t bags = static_cast<int64_t>(o_.bag_slots.size());
    const int64_t out_w = o_.wide ? o_.dim : OutWidth(), first = o_.wide ? 0 : o_.at;
    Tensor& y = ReuseBuffer(s.y, DTypeOf<T>(), {b, out_w});
    s.ids.resize(static_cast<size_t>(b * slots_));
    s.scale.resize(static_cast<size_t>(b * bags));
    const T* xp = x.template data<T>();
    const T* table = remote_ ? window_rows_.data() : arena_->param(table_);
    T* yp = y.template data<T>();
    for (int64_t r = 0; r < b; ++r) {
      const T* in = xp + r * w_;
      T* out = yp + r * out_w;
      if (!o_.wide) std::memcpy(out, in, sizeof(T) * static_cast<size_t>(o_.at));
      int64_t slot = 0;
      for (int64_t f = 0; f < bags; ++f) {
        T* acc = out + first + f * o_.dim;
        std::fill(acc, acc + o_.dim, T(0));
        int64_t n = 0;
        for (int64_t k = 0; k < o_.bag_slots[static_cast<size_t>(f)]; ++k, ++slot) {
          const int64_t id = Row(Id(in[o_.at + slot], r, slot));
          s.ids[static_cast<size_t>(r * slots_ + slot)] = id;
          if (id < 0) continue;
          ++n;
          const T* row = table + id * o_.dim;
          for (int64_t d = 0; d < o_.dim; ++d) acc[d] += row[d];
        }
        const T scale = Scale(n);
        s.scale[static_cast<size_t>(r * bags + f)] = scale;
        if (scale != T(1)) {
          for (int64_t d = 0; d < o_.dim; ++d) acc[d] *= scale;
        }
      }
      if (o_.wide) continue;
      std::memcpy(out + o_.at + bags * o_.dim, in + o_.at + slots_,
                  sizeof(T) * static_cast<size_t>(w_ - o_.at - slots_));
    }
    return y;
  }

  // dtable[id] += scale * dy of the id's bag; dx = dy around the bags, 0 at the slots.
  Tensor DoBackward(const Tensor& dy, bool need_dx, LayerState& st) override {
    CheckHostTensor(dy, "embedbag");
    State& s = StateAs<State>(st, "embedbag");
    const int64_t b = static_cast<int64_t>(s.ids.size()) / slots_;
    const int64_t bags = static_cast<int64_t>(o_.bag_slots.size());
    const int64_t out_w = o_.wide ? o_.dim : OutWidth(), first = o_.wide ? 0 : o_.at;
    const T* d = dy.template data<T>();
    T* grad = remote_ ? window_grads_.data() : arena_->grad(table_);
    for (int64_t r = 0; r < b; ++r) {
      int64_t slot = 0;
      for (int64_t f = 0; f < bags; ++f) {
        const T* g = d + r * out_w + first + f * o_.dim;
        const T scale = s.scale[static_cast<size_t>(r * bags + f)];
        for (int64_t k = 0; k < o_.bag_slots[static_cast<size_t>(f)]; ++k, ++slot) {
          const int64_t id = s.ids[static_cast<size_t>(r * slots_ + slot)];
          if (id < 0) continue;
          T* row = grad + id * o_.dim;
          for (int64_t j = 0; j < o_.dim; ++j) row[j] += scale * g[j];
        }
      }
    }
    if (!need_dx) return Tensor();
    Tensor& dx = ReuseBuffer(s.dx, DTypeOf<T>(), {b, w_});
    T* dxp = dx.template data<T>();
    if (o_.wide) {  // the input's numbers do not reach a wide output
      std::fill(dxp, dxp + b * w_, T(0));
      return dx;
    }
    for (int64_t r = 0; r < b; ++r) {
      const T* src = d + r * out_w;
      T* out = dxp + r * w_;
      std::memcpy(out, src, sizeof(T) * static_cast<size_t>(o_.at));
      std::fill(out + o_.at, out + o_.at + slots_, T(0));
      std::memcpy(out + o_.at + slots_, src + o_.at + bags * o_.dim,
                  sizeof(T) * static_cast<size_t>(w_ - o_.at - slots_));
    }
    return dx;
  }

 private:
  struct State final : LayerState {
    Tensor y, dx;
    std::vector<int64_t> ids;  // (B, S): the table row (the window's), -1 where no id
    std::vector<T> scale;      // (B, bags): the combiner's factor
  };

  int64_t OutWidth() const {
    return w_ - slots_ + static_cast<int64_t>(o_.bag_slots.size()) * o_.dim;
  }

  T Scale(int64_t n) const {
    if (n == 0 || o_.combiner == BagCombiner::kSum) return T(1);
    const T count = static_cast<T>(n);
    return o_.combiner == BagCombiner::kMean ? T(1) / count : T(1) / std::sqrt(count);
  }

  int64_t Id(T value, int64_t row, int64_t slot) const {
    const double v = static_cast<double>(value);
    if (v == -1.0) return -1;
    if (!(v >= 0 && v < static_cast<double>(o_.rows)) || std::floor(v) != v) {
      throw Error(ErrorCode::kInvalidArgument,
                  Describe() + ": sample " + std::to_string(row) + " holds " + std::to_string(v) +
                      " in slot " + std::to_string(slot) + " (column " +
                      std::to_string(o_.at + slot) + "), expected -1 or an id in [0, " +
                      std::to_string(o_.rows) + ")",
                  {.key = "model", .hint = "the assembled id space is data.assemble's layout"});
    }
    return static_cast<int64_t>(v);
  }

  // The table row of `id`: itself, or its place in the window (remote tables).
  int64_t Row(int64_t id) const {
    if (!remote_ || id < 0) return id;
    const auto it = std::lower_bound(window_ids_.begin(), window_ids_.end(), id);
    if (it == window_ids_.end() || *it != id) {
      throw Error(ErrorCode::kInternal, Describe() + ": id " + std::to_string(id) +
                                            " is not in the window of " +
                                            std::to_string(window_ids_.size()) + " rows set");
    }
    return it - window_ids_.begin();
  }

  EmbeddingBagOptions o_;
  bool remote_ = false;
  uint64_t seed_ = 0, stream_ = 0;
  std::vector<int64_t> window_ids_;  // remote_: sorted, distinct
  std::vector<T> window_rows_, window_grads_;
  int64_t slots_ = 0;
  int64_t w_ = 0;
  Arena<T>* arena_ = nullptr;
  int table_ = -1;
};

}  // namespace

template <typename T>
std::unique_ptr<Layer<T>> MakeEmbeddingBag(const EmbeddingBagOptions& options) {
  return std::make_unique<EmbeddingBag<T>>(options);
}
template std::unique_ptr<Layer<float>> MakeEmbeddingBag<float>(const EmbeddingBagOptions&);
template std::unique_ptr<Layer<double>> MakeEmbeddingBag<double>(const EmbeddingBagOptions&);

}  // namespace shardflow
