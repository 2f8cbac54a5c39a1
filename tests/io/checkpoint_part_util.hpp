// Helpers for the partitioned-checkpoint tests: deterministic model and optimizer contents keyed
// by parameter name (so a pipeline stage and the whole model hold the same values), fabricated
// tensor-parallel parts cut from a whole model, and a checkpoint file's full contents for
// byte-exact comparison.
// Thread-safety: test code, one thread.
#pragma once

#include <hdf5.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/checkpoint/checkpoint.hpp"
#include "io/hdf5/objects.hpp"

namespace shardflow::testing {

inline uint32_t NameHash(const std::string& s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  return h;
}

// A value for element i of tensor `name`, the same in every part that holds it.
inline float ValueOf(const std::string& name, int64_t i, float scale) {
  return scale *
         (static_cast<float>((NameHash(name) + static_cast<uint32_t>(i) * 2654435761u) % 1000u) /
              500.0f -
          1.0f);
}

// Parameters, optimizer slots (iterations 5) and buffers from their names, so they are equal
// wherever the same parameter is held (set, not computed: no arithmetic that could round
// differently in two parts). REQUIRES: unsplit specs.
inline void FillByName(Sequential<float>& model, Optimizer& opt) {
  Arena<float>& a = model.arena();
  const std::vector<NamedTensor> slots = opt.Slots();
  for (const ParamSpec& s : a.specs()) {
    for (int64_t i = 0; i < s.size; ++i) {
      a.params()[s.offset + i] = ValueOf(s.FullName(), i, 1.0f);
      for (const NamedTensor& slot : slots)
        slot.tensor->data<float>()[s.offset + i] = ValueOf(s.FullName() + slot.name, i, 0.5f);
    }
  }
  opt.set_iterations(5);
  for (const NamedTensor& b : model.Buffers()) {
    for (int64_t i = 0; i < b.tensor->num_elements(); ++i)
      b.tensor->data<float>()[i] = ValueOf(b.name, i, 2.0f) + 3.0f;  // variances stay positive
  }
}

// [begin, begin + extent) along `axis` of a row-major tensor of `shape` (all of it: axis < 0).
inline std::vector<float> SliceOf(const float* data, const Shape& shape, int axis, int64_t begin,
                                  int64_t extent) {
  if (axis < 0) return std::vector<float>(data, data + NumElements(shape));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= shape[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t full = shape[static_cast<size_t>(axis)];
  std::vector<float> out;
  for (int64_t o = 0; o < outer; ++o) {
    const float* row = data + (o * full + begin) * inner;
    out.insert(out.end(), row, row + extent * inner);
  }
  return out;
}

// Tensor way `way` of `ways` cut from `whole` (a whole model or a stage): all its layers; parameter
// `name` split along axis_of[name] into `ways` pieces with boundaries full * k / ways (so uneven),
// the others held whole (replicated); its own arena and optimizer slots hold the whole model's
// values there.
struct FabricatedPart {
  std::vector<float> arena;
  std::unique_ptr<Optimizer> opt;
  CheckpointPart part;
};

inline std::unique_ptr<FabricatedPart> Fabricate(Sequential<float>& whole, Optimizer& whole_opt,
                                                 const std::map<std::string, int>& axis_of, int way,
                                                 int ways) {
  auto f = std::make_unique<FabricatedPart>();
  const Arena<float>& a = whole.arena();
  std::vector<ParamSpec> specs;
  int64_t offset = 0;
  for (int id : a.arena_order()) {
    ParamSpec s = a.spec(id);
    auto it = axis_of.find(s.FullName());
    if (it != axis_of.end()) {
      const int64_t full = s.shape[static_cast<size_t>(it->second)];
      s.full_shape = s.shape;
      s.split_axis = it->second;
      s.split_begin = full * way / ways;
      s.shape[static_cast<size_t>(it->second)] = full * (way + 1) / ways - s.split_begin;
    }
    s.size = NumElements(s.shape);
    s.offset = offset;
    offset += s.size;
    specs.push_back(s);
  }
  f->arena.resize(static_cast<size_t>(offset));
  f->opt = MakeOptimizer({.name = whole_opt.name()}, offset);
  f->opt->set_iterations(whole_opt.iterations());
  const std::vector<NamedTensor> whole_slots = whole_opt.Slots();
  const std::vector<NamedTensor> part_slots = f->opt->Slots();
  for (const ParamSpec& s : specs) {
    const ParamSpec* w = nullptr;
    for (const ParamSpec& ws : a.specs())
      if (ws.FullName() == s.FullName()) w = &ws;
    const int64_t extent = s.split_axis < 0 ? 0 : s.shape[static_cast<size_t>(s.split_axis)];
    auto copy = [&](const float* from, float* to) {
      const std::vector<float> v =
          SliceOf(from + w->offset, w->shape, s.split_axis, s.split_begin, extent);
      std::copy(v.begin(), v.end(), to + s.offset);
    };
    copy(a.params(), f->arena.data());
    for (size_t k = 0; k < whole_slots.size(); ++k)
      copy(whole_slots[k].tensor->data<float>(), part_slots[k].tensor->data<float>());
  }
  f->part = CheckpointPart{.first_layer = whole.first_layer(),
                           .end_layer = whole.first_layer() + whole.num_layers(),
                           .spec_layers = whole.spec_layers(),
                           .spec = whole.spec(),
                           .input_shape = whole.input_shape(),
                           .specs = specs,
                           .arena_size = offset,
                           .params = f->arena.data(),
                           .buffers = whole.Buffers(),
                           .optimizer = f->opt.get()};
  return f;
}

// Every dataset's type, shape, chunk and bytes, and every attribute a checkpoint has.
inline std::map<std::string, std::string> FileContents(const std::string& path) {
  io::Hdf5File file = io::Hdf5File::Open(path, io::SelfCommunicator());
  std::map<std::string, std::string> out;
  for (const io::Hdf5DatasetInfo& d : file.ListDatasets()) {
    io::H5Id id(H5Dopen2(file.id(), d.name.c_str(), H5P_DEFAULT));
    io::H5Id type(H5Dget_type(id.get()));
    std::string bytes(static_cast<size_t>(NumElements(d.shape)) * H5Tget_size(type.get()), '\0');
    io::ReadWholeDataset(file, id.get(), d.name, type.get(), bytes.data());
    out[d.name] = d.type_name + ShapeToString(d.shape) + ShapeToString(d.chunk) +
                  std::to_string(d.filters.size()) + bytes;
  }
  for (const char* a :
       {"version", "step", "epoch", "seed", "num_params", "arena_size", "params_crc32"})
    out[std::string("@") + a] = std::to_string(io::ReadIntAttribute(file, "/", a));
  for (const char* a : {"format", "model_spec", "input_shape"})
    out[std::string("@") + a] = io::ReadStringAttribute(file, "/", a);
  if (file.HasLink("/optimizer")) {
    out["@opt.name"] = io::ReadStringAttribute(file, "/optimizer", "name");
    out["@opt.iterations"] = std::to_string(io::ReadIntAttribute(file, "/optimizer", "iterations"));
  }
  return out;
}

}  // namespace shardflow::testing
