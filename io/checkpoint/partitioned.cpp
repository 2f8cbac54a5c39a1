// Writing a model held in parts (SavePartitionedCheckpoint): the unsplit model's file from the
// pipeline stages and tensor-parallel slices of one data-parallel replica.
//
// Phases, each ending in an agreement so that a failure on any rank is an error on every rank:
//   1. plan: every rank checks its own part, then all-gathers every rank's summary (layers,
//      parameters with their slices and run CRCs, buffers, optimizer kind) and computes the
//      same plan (io/checkpoint/layout.hpp): the whole model's parameters in whole-arena order,
//      who writes each, and the whole arena's CRC; a gap or overlap is the same error on every
//      rank. Each rank checks that what it writes is finite.
//   2. share rank 0's state, optimizer name and iterations;
//   3. write (io/checkpoint/internal.hpp's PublishCheckpoint): every rank creates every object;
//      a parameter's writers write their slabs of its dataset, and the same elements of each
//      flat optimizer slot as one strided slab per parameter; a buffer's lowest holder writes
//      it; rank 0 writes state and config;
//   4. publish: rank 0 renames, fsyncs and prunes.
#include <algorithm>
#include <cstring>

#include "core/host_state.hpp"
#include "io/checkpoint/checkpoint.hpp"
#include "io/checkpoint/format.hpp"
#include "io/checkpoint/internal.hpp"
#include "io/checkpoint/layout.hpp"
#include "io/hdf5/objects.hpp"

namespace shardflow {
namespace {

namespace cl = checkpoint_layout;
namespace fmt = checkpoint_format;

int64_t Extent(const ParamSpec& s) {
  return s.split_axis < 0 ? 0 : s.shape.at(static_cast<size_t>(s.split_axis));
}

// A part that cannot be described (a parameter outside its arena, slots of another size, or
// parameters not in arena order) is a programming error of the caller.
Status CheckPart(const CheckpointPart& part) {
  auto bad = [&](const std::string& what) {
    return Status(ErrorCode::kInvalidArgument, "checkpoint part of layers [" +
                                                   std::to_string(part.first_layer) + "," +
                                                   std::to_string(part.end_layer) + "): " + what);
  };
  std::vector<const ParamSpec*> order;
  for (const ParamSpec& s : part.specs) {
    if (s.offset < 0 || s.size != NumElements(s.shape) || s.offset + s.size > part.arena_size) {
      return bad("parameter " + s.FullName() + " lies outside the part's arena");
    }
    order.push_back(&s);
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const ParamSpec* a, const ParamSpec* b) { return a->layer > b->layer; });
  for (size_t i = 1; i < order.size(); ++i) {
    if (order[i]->offset < order[i - 1]->offset + order[i - 1]->size) {
      return bad("parameter " + order[i]->FullName() + " is not in arena order");
    }
  }
  if (part.optimizer != nullptr) {
    for (const NamedTensor& s : part.optimizer->Slots()) {
      if (s.tensor->num_elements() != part.arena_size) {
        return bad("optimizer slot " + s.name + " has " + std::to_string(s.tensor->num_elements()) +
                   " elements, not the arena's " + std::to_string(part.arena_size));
      }
    }
  }
  return Status::Ok();
}

cl::PartSummary Summarize(const CheckpointPart& part) {
  cl::PartSummary out{.first_layer = part.first_layer,
                      .end_layer = part.end_layer,
                      .spec_layers = part.spec_layers,
                      .spec = part.spec,
                      .input_shape = ShapeToString(part.input_shape)};
  for (const ParamSpec& s : part.specs) {
    cl::PartParam p{.name = s.FullName(),
                    .layer = s.layer,
                    .shape = s.shape,
                    .split_axis = s.split_axis,
                    .split_begin = s.split_begin,
                    .full_shape = s.FullShape()};
    const float* data = part.params + s.offset;
    for (const ArenaSlice& run :
         cl::SliceRuns(p.full_shape, s.split_axis, s.split_begin, Extent(s))) {
      p.runs.push_back(
          {run.offset, run.size, Crc32(data, static_cast<size_t>(run.size) * sizeof(float))});
      data += run.size;
    }
    out.params.push_back(std::move(p));
  }
  for (const NamedTensor& b : part.buffers) out.buffers.push_back({b.name, b.tensor->shape()});
  if (part.optimizer != nullptr) {
    out.optimizer = part.optimizer->name();
    for (const NamedTensor& s : part.optimizer->Slots()) out.slots.push_back(s.name);
  }
  return out;
}

// Every rank's bytes, through the int64 all-gather (a length word, then the bytes packed).
std::vector<std::string> AllgatherBytes(io::Communicator comm, const std::string& mine) {
  std::vector<int64_t> words(1 + (mine.size() + 7) / 8, 0);
  words[0] = static_cast<int64_t>(mine.size());
  if (!mine.empty()) std::memcpy(words.data() + 1, mine.data(), mine.size());
  std::vector<std::string> out;
  for (const std::vector<int64_t>& w : io::AllgatherInt64(comm, words)) {
    std::string bytes(static_cast<size_t>(w.at(0)), '\0');
    if (!bytes.empty()) std::memcpy(bytes.data(), w.data() + 1, bytes.size());
    out.push_back(std::move(bytes));
  }
  return out;
}

bool Writes(const cl::LayoutParam& p, int rank) {
  return std::find(p.writers.begin(), p.writers.end(), rank) != p.writers.end();
}

// This rank's parameters in the plan's order, with the plan's entry (only those it writes).
std::vector<std::pair<const cl::LayoutParam*, const ParamSpec*>> Written(const cl::Layout& layout,
                                                                         const CheckpointPart& part,
                                                                         int rank) {
  std::vector<std::pair<const cl::LayoutParam*, const ParamSpec*>> out;
  for (const cl::LayoutParam& lp : layout.params) {
    if (!Writes(lp, rank)) continue;
    for (const ParamSpec& s : part.specs) {
      if (s.FullName() == lp.name) out.emplace_back(&lp, &s);
    }
  }
  return out;
}

Status CheckFiniteWrites(const cl::Layout& layout, const CheckpointPart& part, int rank,
                         const std::string& path) {
  using checkpoint_internal::CheckFinite;
  for (const auto& [lp, s] : Written(layout, part, rank)) {
    Status st = CheckFinite("parameter", lp->name, part.params + s->offset, s->size, path);
    for (size_t i = 0; st.ok() && part.optimizer != nullptr && i < layout.slots.size(); ++i) {
      const NamedTensor slot = part.optimizer->Slots()[i];
      st = CheckFinite("optimizer slot", slot.name, slot.tensor->data<float>() + s->offset, s->size,
                       path);
    }
    if (!st.ok()) return st;
  }
  for (const cl::LayoutBuffer& b : layout.buffers) {
    if (b.writer != rank) continue;
    for (const NamedTensor& t : part.buffers) {
      if (t.name != b.name) continue;
      Status st =
          CheckFinite("buffer", b.name, t.tensor->data<float>(), t.tensor->num_elements(), path);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

void WriteTensors(const io::Hdf5File& file, const cl::Layout& layout, const CheckpointPart& part) {
  using checkpoint_internal::Dims;
  const int rank = file.rank();
  const auto written = Written(layout, part, rank);
  static const float kNothing = 0.0f;  // the base of an empty selection
  for (const cl::LayoutParam& lp : layout.params) {
    const std::string name = fmt::kParams + lp.name;
    io::H5Id d = io::CreateChecksummedDataset(file, name, H5T_NATIVE_FLOAT, Dims(lp.full_shape),
                                              fmt::kMaxChunkBytes);
    io::WriteAttribute(file, name, fmt::kParamCrc, static_cast<int64_t>(lp.crc));
    if (lp.size == 0) continue;
    std::vector<io::SlabPiece> pieces;
    for (const auto& [w, s] : written) {
      if (w == &lp) {
        pieces.push_back(
            {cl::ParamSlab(lp.full_shape, s->split_axis, s->split_begin, Extent(*s)), s->offset});
      }
    }
    io::WriteSlabs(file, d.get(), name, H5T_NATIVE_FLOAT, part.params, pieces);
  }

  for (const cl::LayoutBuffer& b : layout.buffers) {
    const void* data = &kNothing;
    for (const NamedTensor& t : part.buffers) {
      if (t.name == b.name && b.writer == rank) data = t.tensor->data<float>();
    }
    checkpoint_internal::WriteByOneRank(file, fmt::kBuffers + b.name, H5T_NATIVE_FLOAT, data,
                                        Dims(b.shape), b.writer);
  }
  for (size_t i = 0; i < layout.slots.size(); ++i) {
    const std::string name = std::string(fmt::kOptimizer) + "/" + layout.slots[i];
    io::H5Id d = io::CreateChecksummedDataset(file, name, H5T_NATIVE_FLOAT,
                                              {static_cast<hsize_t>(layout.arena_size)},
                                              fmt::kMaxChunkBytes);
    if (layout.arena_size == 0) continue;
    std::vector<io::SlabPiece> pieces;
    for (const auto& [lp, s] : written) {
      if (s->size == 0) continue;
      pieces.push_back(
          {cl::SlotSlab(lp->full_shape, s->split_axis, s->split_begin, Extent(*s), lp->offset),
           s->offset});
    }
    const float* base =
        part.optimizer != nullptr ? part.optimizer->Slots()[i].tensor->data<float>() : &kNothing;
    io::WriteSlabs(file, d.get(), name, H5T_NATIVE_FLOAT, base, pieces);
  }
}

}  // namespace

CheckpointPart MakeCheckpointPart(Sequential<float>& model, Optimizer* optimizer) {
  CheckpointPart part{.first_layer = model.first_layer(),
                      .end_layer = model.first_layer() + model.num_layers(),
                      .spec_layers = model.spec_layers(),
                      .spec = model.spec(),
                      .input_shape = model.input_shape(),
                      .specs = model.arena().specs(),
                      .arena_size = model.arena().size(),
                      .params = model.arena().params(),
                      .buffers = model.Buffers(),
                      .optimizer = optimizer};
  return part;
}

std::string SavePartitionedCheckpoint(const CheckpointOptions& options, io::Communicator comm,
                                      const CheckpointPart& part, const TrainingState& state) {
  checkpoint_internal::CheckOptions(options);
  const int rank = io::CommRank(comm);
  // Phase 1.
  io::AgreeOnStatus(comm, CheckPart(part));
  std::vector<cl::PartSummary> parts;
  for (const std::string& bytes : AllgatherBytes(comm, cl::EncodePartSummary(Summarize(part)))) {
    parts.push_back(cl::DecodePartSummary(bytes));
  }
  cl::Layout layout;
  ThrowIfError(cl::PlanLayout(parts, &layout));
  const std::string final_path = checkpoint_internal::CheckpointPath(options, state.step);
  io::AgreeOnStatus(comm, CheckFiniteWrites(layout, part, rank, final_path));
  // Phase 2.
  const checkpoint_internal::RootMeta meta = checkpoint_internal::ShareRootMeta(
      comm, part.optimizer, state, layout.model_spec, layout.input_shape);
  // Phases 3 and 4.
  checkpoint_internal::PublishCheckpoint(comm, options, final_path, [&](const io::Hdf5File& f) {
    WriteTensors(f, layout, part);
    checkpoint_internal::WriteRootObjects(f, meta, static_cast<int64_t>(layout.params.size()),
                                          layout.arena_size, layout.params_crc);
  });
  return final_path;
}

std::string SavePartitionedCheckpoint(const CheckpointOptions& options, io::Communicator comm,
                                      Sequential<float>& part, Optimizer* optimizer,
                                      const TrainingState& state) {
  const HostStateScope on_host(part, optimizer);  // a part on a device is saved from a copy
  return SavePartitionedCheckpoint(options, comm, MakeCheckpointPart(part, optimizer), state);
}

}  // namespace shardflow
