#include "io/checkpoint/layout.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

namespace shardflow::checkpoint_layout {
namespace {

// Length-prefixed little pieces; both ends run on the same build, so no byte-order handling.
class Encoder {
 public:
  void Int(int64_t v) { out_.append(reinterpret_cast<const char*>(&v), sizeof(v)); }
  void Str(const std::string& s) {
    Int(static_cast<int64_t>(s.size()));
    out_ += s;
  }
  void Dims(const Shape& s) {
    Int(static_cast<int64_t>(s.size()));
    for (int64_t d : s) Int(d);
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Decoder {
 public:
  explicit Decoder(const std::string& in) : in_(in) {}
  int64_t Int() {
    int64_t v = 0;
    if (pos_ + sizeof(v) > in_.size()) throw Error(ErrorCode::kInternal, "short part summary");
    std::memcpy(&v, in_.data() + pos_, sizeof(v));
    pos_ += sizeof(v);
    return v;
  }
  std::string Str() {
    const size_t n = static_cast<size_t>(Int());
    if (pos_ + n > in_.size()) throw Error(ErrorCode::kInternal, "short part summary");
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  Shape Dims() {
    Shape s(static_cast<size_t>(Int()));
    for (int64_t& d : s) d = Int();
    return s;
  }

 private:
  const std::string& in_;
  size_t pos_ = 0;
};

std::string RankStr(int r) { return "rank " + std::to_string(r); }

Status Invalid(const std::string& message, const std::string& key = "") {
  return Status(ErrorCode::kInvalidArgument, message,
                {.key = key,
                 .hint = "the parts of a partitioned checkpoint must hold the whole model "
                         "exactly once (replicas of a whole parameter excepted)"});
}

// The parts' distinct layer ranges tile [0, spec_layers); ranks with one range share its spec.
Status CheckLayers(const std::vector<PartSummary>& parts, Layout* out) {
  std::map<std::pair<int, int>, int> first_holder;  // range -> lowest rank
  for (size_t r = 0; r < parts.size(); ++r) {
    const PartSummary& p = parts[r];
    if (p.first_layer < 0 || p.end_layer <= p.first_layer || p.end_layer > p.spec_layers) {
      return Invalid(RankStr(static_cast<int>(r)) + "'s layers " +
                     HalfOpenRange(p.first_layer, p.end_layer) +
                     " are not a range of the model's " + std::to_string(p.spec_layers));
    }
    if (p.spec_layers != parts[0].spec_layers) {
      return Invalid(RankStr(static_cast<int>(r)) + "'s model has " +
                     std::to_string(p.spec_layers) + " layers but rank 0's has " +
                     std::to_string(parts[0].spec_layers));
    }
    auto [it, fresh] = first_holder.emplace(std::make_pair(p.first_layer, p.end_layer), r);
    if (!fresh && parts[it->second].spec != p.spec) {
      return Invalid(RankStr(static_cast<int>(r)) + "'s layers " +
                     HalfOpenRange(p.first_layer, p.end_layer) + " are '" + p.spec + "' but " +
                     RankStr(it->second) + "'s are '" + parts[it->second].spec + "'");
    }
  }
  int covered = 0;
  int previous = -1;
  for (const auto& [range, rank] : first_holder) {
    if (range.first > covered) {
      return Invalid("no rank holds layers " + HalfOpenRange(covered, range.first) +
                     " of the model's " + std::to_string(parts[0].spec_layers));
    }
    if (range.first < covered) {
      return Invalid(RankStr(rank) + "'s layers " + HalfOpenRange(range.first, range.second) +
                     " overlap " + RankStr(previous) + "'s " +
                     HalfOpenRange(parts[previous].first_layer, parts[previous].end_layer));
    }
    if (!out->model_spec.empty() && !parts[rank].spec.empty()) out->model_spec += ", ";
    out->model_spec += parts[rank].spec;
    if (range.first == 0) out->input_shape = parts[rank].input_shape;
    covered = range.second;
    previous = rank;
  }
  if (covered < parts[0].spec_layers) {
    return Invalid("no rank holds layers " + HalfOpenRange(covered, parts[0].spec_layers) +
                   " of the model's " + std::to_string(parts[0].spec_layers));
  }
  return Status::Ok();
}

struct Holder {
  int rank;
  const PartParam* param;
};

// The slices of one parameter tile its full shape; fills the writers.
Status CheckCoverage(const std::string& name, std::vector<Holder> holders, LayoutParam* lp) {
  const PartParam& first = *holders[0].param;
  for (const Holder& h : holders) {
    const PartParam& p = *h.param;
    if (p.full_shape != first.full_shape || p.layer != first.layer) {
      return Invalid("parameter " + name + " is " + ShapeToString(p.full_shape) + " of layer " +
                         std::to_string(p.layer) + " on " + RankStr(h.rank) + " but " +
                         ShapeToString(first.full_shape) + " of layer " +
                         std::to_string(first.layer) + " on " + RankStr(holders[0].rank),
                     name);
    }
    if ((p.split_axis < 0) != (first.split_axis < 0) ||
        (p.split_axis >= 0 && p.split_axis != first.split_axis)) {
      return Invalid("parameter " + name + " is split along axis " + std::to_string(p.split_axis) +
                         " on " + RankStr(h.rank) + " but " + std::to_string(first.split_axis) +
                         " on " + RankStr(holders[0].rank) + " (-1: held whole)",
                     name);
    }
  }
  if (first.split_axis < 0) {
    lp->writers = {holders[0].rank};
    return Status::Ok();
  }
  const int axis = first.split_axis;
  std::sort(holders.begin(), holders.end(), [](const Holder& a, const Holder& b) {
    return std::tie(a.param->split_begin, a.rank) < std::tie(b.param->split_begin, b.rank);
  });
  const std::string along = " along axis " + std::to_string(axis);
  int64_t covered = 0;
  const Holder* previous = nullptr;
  for (const Holder& h : holders) {
    const int64_t begin = h.param->split_begin;
    const int64_t end = begin + h.param->shape[static_cast<size_t>(axis)];
    if (begin > covered) {
      return Invalid("parameter " + name + ": no rank holds " + HalfOpenRange(covered, begin) +
                         along + " (gap before " + RankStr(h.rank) + "'s slice " +
                         HalfOpenRange(begin, end) + ")",
                     name);
    }
    if (begin < covered) {
      const int64_t pb = previous->param->split_begin;
      return Invalid("parameter " + name + ": " + RankStr(h.rank) + "'s slice " +
                         HalfOpenRange(begin, end) + along + " overlaps " +
                         RankStr(previous->rank) + "'s slice " + HalfOpenRange(pb, covered),
                     name);
    }
    covered = end;
    previous = &h;
    lp->writers.push_back(h.rank);
  }
  const int64_t full = first.full_shape[static_cast<size_t>(axis)];
  if (covered != full) {
    return Invalid("parameter " + name + ": no rank holds " + HalfOpenRange(covered, full) + along +
                       " of its " + ShapeToString(first.full_shape),
                   name);
  }
  return Status::Ok();
}

// Validates one held parameter's own fields (shape within full shape).
Status CheckHeld(int rank, const PartParam& p) {
  bool ok = p.shape.size() == p.full_shape.size();
  for (size_t i = 0; ok && i < p.shape.size(); ++i) {
    ok = static_cast<int>(i) == p.split_axis
             ? p.split_begin >= 0 && p.shape[i] <= p.full_shape[i] - p.split_begin
             : p.shape[i] == p.full_shape[i];
  }
  if (p.split_axis >= static_cast<int>(p.full_shape.size())) ok = false;
  if (ok) return Status::Ok();
  return Invalid(RankStr(rank) + " holds " + ShapeToString(p.shape) + " of parameter " + p.name +
                     " " + ShapeToString(p.full_shape) + " split along axis " +
                     std::to_string(p.split_axis) + " from " + std::to_string(p.split_begin),
                 p.name);
}

Status CheckOptimizers(const std::vector<PartSummary>& parts, Layout* out) {
  for (size_t r = 1; r < parts.size(); ++r) {
    if (parts[r].optimizer != parts[0].optimizer || parts[r].slots != parts[0].slots) {
      auto kind = [](const PartSummary& p) {
        return p.optimizer.empty() ? std::string("none") : p.optimizer;
      };
      return Invalid(RankStr(static_cast<int>(r)) + "'s optimizer is " + kind(parts[r]) +
                     " but rank 0's is " + kind(parts[0]));
    }
  }
  out->optimizer = parts[0].optimizer;
  out->slots = parts[0].slots;
  return Status::Ok();
}

Status PlanBuffers(const std::vector<PartSummary>& parts, Layout* out) {
  std::map<std::string, LayoutBuffer> buffers;  // names begin with the layer: layer order
  for (size_t r = 0; r < parts.size(); ++r) {
    for (const PartBuffer& b : parts[r].buffers) {
      auto [it, fresh] =
          buffers.emplace(b.name, LayoutBuffer{b.name, b.shape, static_cast<int>(r)});
      if (!fresh && it->second.shape != b.shape) {
        return Invalid("buffer " + b.name + " is " + ShapeToString(b.shape) + " on " +
                           RankStr(static_cast<int>(r)) + " but " +
                           ShapeToString(it->second.shape) + " on " + RankStr(it->second.writer),
                       b.name);
      }
    }
  }
  for (auto& [name, b] : buffers) out->buffers.push_back(b);
  return Status::Ok();
}

}  // namespace

std::string EncodePartSummary(const PartSummary& part) {
  Encoder e;
  e.Int(part.first_layer);
  e.Int(part.end_layer);
  e.Int(part.spec_layers);
  e.Str(part.spec);
  e.Str(part.input_shape);
  e.Str(part.optimizer);
  e.Int(static_cast<int64_t>(part.slots.size()));
  for (const std::string& s : part.slots) e.Str(s);
  e.Int(static_cast<int64_t>(part.params.size()));
  for (const PartParam& p : part.params) {
    e.Str(p.name);
    e.Int(p.layer);
    e.Dims(p.shape);
    e.Int(p.split_axis);
    e.Int(p.split_begin);
    e.Dims(p.full_shape);
    e.Int(static_cast<int64_t>(p.runs.size()));
    for (const SliceCrc& c : p.runs) {
      e.Int(c.offset);
      e.Int(c.size);
      e.Int(c.crc);
    }
  }
  e.Int(static_cast<int64_t>(part.buffers.size()));
  for (const PartBuffer& b : part.buffers) {
    e.Str(b.name);
    e.Dims(b.shape);
  }
  return e.Take();
}

PartSummary DecodePartSummary(const std::string& bytes) {
  Decoder d(bytes);
  PartSummary part;
  part.first_layer = static_cast<int>(d.Int());
  part.end_layer = static_cast<int>(d.Int());
  part.spec_layers = static_cast<int>(d.Int());
  part.spec = d.Str();
  part.input_shape = d.Str();
  part.optimizer = d.Str();
  part.slots.resize(static_cast<size_t>(d.Int()));
  for (std::string& s : part.slots) s = d.Str();
  part.params.resize(static_cast<size_t>(d.Int()));
  for (PartParam& p : part.params) {
    p.name = d.Str();
    p.layer = static_cast<int>(d.Int());
    p.shape = d.Dims();
    p.split_axis = static_cast<int>(d.Int());
    p.split_begin = d.Int();
    p.full_shape = d.Dims();
    p.runs.resize(static_cast<size_t>(d.Int()));
    for (SliceCrc& c : p.runs) {
      c.offset = d.Int();
      c.size = d.Int();
      c.crc = static_cast<uint32_t>(d.Int());
    }
  }
  part.buffers.resize(static_cast<size_t>(d.Int()));
  for (PartBuffer& b : part.buffers) {
    b.name = d.Str();
    b.shape = d.Dims();
  }
  return part;
}

Status PlanLayout(const std::vector<PartSummary>& parts, Layout* out) {
  *out = Layout();
  if (parts.empty()) return Invalid("no parts");
  Status st = CheckLayers(parts, out);
  if (st.ok()) st = CheckOptimizers(parts, out);
  if (st.ok()) st = PlanBuffers(parts, out);
  if (!st.ok()) return st;
  // Holders of each parameter, and its place: (layer, first declaration position seen).
  std::map<std::string, std::vector<Holder>> holders;
  std::map<std::string, std::pair<int, int>> place;
  std::map<int, int> declared;  // layer -> parameters placed so far
  for (size_t r = 0; r < parts.size(); ++r) {
    for (const PartParam& p : parts[r].params) {
      st = CheckHeld(static_cast<int>(r), p);
      if (!st.ok()) return st;
      holders[p.name].push_back({static_cast<int>(r), &p});
      if (place.emplace(p.name, std::make_pair(p.layer, declared[p.layer])).second) {
        ++declared[p.layer];
      }
    }
  }
  std::vector<std::string> order;
  for (const auto& [name, where] : place) order.push_back(name);
  std::sort(order.begin(), order.end(), [&](const std::string& a, const std::string& b) {
    const auto& pa = place[a];
    const auto& pb = place[b];
    return pa.first != pb.first ? pa.first > pb.first : pa.second < pb.second;
  });
  std::vector<SliceCrc> crcs;
  for (const std::string& name : order) {
    const std::vector<Holder>& h = holders[name];
    LayoutParam lp{.name = name,
                   .layer = h[0].param->layer,
                   .full_shape = h[0].param->full_shape,
                   .offset = out->arena_size,
                   .size = NumElements(h[0].param->full_shape)};
    st = CheckCoverage(name, h, &lp);
    if (!st.ok()) return st;
    std::vector<SliceCrc> runs;
    for (const Holder& w : h) {
      if (std::find(lp.writers.begin(), lp.writers.end(), w.rank) == lp.writers.end()) continue;
      runs.insert(runs.end(), w.param->runs.begin(), w.param->runs.end());
      if (w.param->split_axis < 0) break;  // a replicated whole parameter counts once
    }
    for (const SliceCrc& c : runs) crcs.push_back({lp.offset + c.offset, c.size, c.crc});
    lp.crc = CombineSliceCrcs(std::move(runs));
    out->arena_size += lp.size;
    out->params.push_back(std::move(lp));
  }
  out->params_crc = CombineSliceCrcs(std::move(crcs));
  return Status::Ok();
}

std::vector<ArenaSlice> SliceRuns(const Shape& full_shape, int axis, int64_t begin,
                                  int64_t extent) {
  const int64_t size = NumElements(full_shape);
  if (axis < 0) return size > 0 ? std::vector<ArenaSlice>{{0, size}} : std::vector<ArenaSlice>{};
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= full_shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < full_shape.size(); ++i) inner *= full_shape[i];
  const int64_t full = full_shape[static_cast<size_t>(axis)];
  std::vector<ArenaSlice> runs;
  if (extent * inner == 0) return runs;
  for (int64_t o = 0; o < outer; ++o) {
    const int64_t offset = (o * full + begin) * inner;
    if (!runs.empty() && runs.back().offset + runs.back().size == offset) {
      runs.back().size += extent * inner;
    } else {
      runs.push_back({offset, extent * inner});
    }
  }
  return runs;
}

io::Hdf5Slab ParamSlab(const Shape& full_shape, int axis, int64_t begin, int64_t extent) {
  io::Hdf5Slab slab;
  for (size_t i = 0; i < full_shape.size(); ++i) {
    const bool split = static_cast<int>(i) == axis;
    slab.start.push_back(static_cast<hsize_t>(split ? begin : 0));
    slab.stride.push_back(1);
    slab.count.push_back(1);
    slab.block.push_back(static_cast<hsize_t>(split ? extent : full_shape[i]));
  }
  return slab;
}

io::Hdf5Slab SlotSlab(const Shape& full_shape, int axis, int64_t begin, int64_t extent,
                      int64_t offset) {
  const int64_t size = NumElements(full_shape);
  if (axis < 0) return {{static_cast<hsize_t>(offset)}, {1}, {1}, {static_cast<hsize_t>(size)}};
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= full_shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < full_shape.size(); ++i) inner *= full_shape[i];
  const int64_t full = full_shape[static_cast<size_t>(axis)];
  const int64_t block = extent * inner;
  return {{static_cast<hsize_t>(offset + begin * inner)},
          {static_cast<hsize_t>(std::max<int64_t>(full * inner, 1))},
          {static_cast<hsize_t>(outer)},
          {static_cast<hsize_t>(block)}};
}

}  // namespace shardflow::checkpoint_layout
