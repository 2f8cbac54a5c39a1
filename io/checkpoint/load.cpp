// Reading checkpoints onto a part of a model (the whole model, a pipeline stage, tensor-parallel
// slices): everything is read and verified into memory (Contents) before the part's parameters,
// buffers or optimizer are touched, so a refused file leaves them as they were.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/check_hdf5.hpp"
#include "core/host_state.hpp"
#include "core/logging.hpp"
#include "io/checkpoint/checkpoint.hpp"
#include "io/checkpoint/format.hpp"
#include "io/checkpoint/layout.hpp"
#include "io/hdf5/objects.hpp"

namespace shardflow {
namespace {

namespace fmt = checkpoint_format;
namespace cl = checkpoint_layout;

io::Hdf5File OpenCheckpoint(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    throw Error(ErrorCode::kNotFound, "checkpoint does not exist", {.file = path});
  }
  try {
    return io::Hdf5File::Open(path, io::SelfCommunicator());
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kIo) throw;
    throw Error(ErrorCode::kDataLoss,
                std::string("cannot open checkpoint: truncated, corrupt or not an HDF5 file (") +
                    e.what() + ")",
                {.file = path, .hint = "use an earlier checkpoint"});
  }
}

// Opens dataset `name`, which must exist and be shaped `want`.
io::H5Id OpenShaped(const io::Hdf5File& file, const std::string& name, const Shape& want,
                    const std::string& what) {
  const std::string& path = file.path();
  if (!file.HasLink(name)) {
    throw Error(ErrorCode::kInvalidArgument, "checkpoint has no " + what + " '" + name + "'",
                {.file = path,
                 .key = name,
                 .hint = "was it written by a different model? use the same model spec"});
  }
  io::H5Id dataset(SF_CHECK_H5(H5Dopen2(file.id(), name.c_str(), H5P_DEFAULT),
                               ErrorContext{.file = path, .key = name}));
  const std::vector<hsize_t> dims = io::DatasetDims(file, dataset.get(), name);
  const Shape got(dims.begin(), dims.end());
  if (got != want) {
    throw Error(ErrorCode::kInvalidArgument,
                what + " " + name + " has shape " + ShapeToString(got) + " in the checkpoint but " +
                    ShapeToString(want) + " in the model",
                {.file = path, .key = name});
  }
  return dataset;
}

// Reads dataset `name` of element type `type` whose shape must equal `want`.
void ReadArray(const io::Hdf5File& file, const std::string& name, hid_t type, const Shape& want,
               void* out, const std::string& what) {
  io::H5Id dataset = OpenShaped(file, name, want, what);
  io::ReadWholeDataset(file, dataset.get(), name, type, out);
}

int64_t Extent(const ParamSpec& s) {
  return s.split_axis < 0 ? 0 : s.shape.at(static_cast<size_t>(s.split_axis));
}

// The part is the whole model, unsplit (a "slice" of a whole extent is the whole parameter):
// the whole-arena checks apply.
// Every layer, no parameter declared a slice (a slice that happens to span the whole, one
// parameter server's range of a sparse table, is still a part's).
bool IsWhole(const CheckpointPart& part) {
  return part.first_layer == 0 && part.end_layer == part.spec_layers &&
         std::all_of(part.specs.begin(), part.specs.end(),
                     [](const ParamSpec& s) { return s.split_axis < 0; });
}

// A 1-D dataset of any length.
template <typename V>
std::vector<V> ReadVector(const io::Hdf5File& file, const std::string& name, hid_t type) {
  io::H5Id dataset(SF_CHECK_H5(H5Dopen2(file.id(), name.c_str(), H5P_DEFAULT),
                               ErrorContext{.file = file.path(), .key = name}));
  int64_t n = 1;
  for (hsize_t d : io::DatasetDims(file, dataset.get(), name)) n *= static_cast<int64_t>(d);
  std::vector<V> out(static_cast<size_t>(n));
  io::ReadWholeDataset(file, dataset.get(), name, type, out.data());
  return out;
}

// Everything a checkpoint holds, read and verified before anything is applied.
struct Contents {
  std::vector<float> params;
  std::vector<std::vector<float>> buffers;
  std::vector<std::vector<float>> slots;
  int64_t iterations = 0;
  TrainingState state;
};

void CheckFormat(const io::Hdf5File& file) {
  if (!io::HasAttribute(file, "/", "format") ||
      io::ReadStringAttribute(file, "/", "format") != fmt::kFormat) {
    throw Error(ErrorCode::kInvalidArgument, "not a shardflow checkpoint (no format attribute)",
                {.file = file.path()});
  }
  const int64_t version = io::ReadIntAttribute(file, "/", "version");
  if (version != fmt::kVersion) {
    throw Error(ErrorCode::kInvalidArgument,
                "checkpoint format version " + std::to_string(version) + " is not supported",
                {.file = file.path(), .hint = "this build reads version 1"});
  }
}

// A parameter read whole is checked against its dataset's CRC attribute (files written before
// the attribute existed have none); a slice cannot be (Fletcher-32 still covers its chunks).
void CheckParamCrc(const io::Hdf5File& file, const std::string& name, const ParamSpec& s,
                   const float* values) {
  if (s.shape != s.FullShape() || !io::HasAttribute(file, name, fmt::kParamCrc)) return;
  const uint32_t want = static_cast<uint32_t>(io::ReadIntAttribute(file, name, fmt::kParamCrc));
  if (want != Crc32(values, static_cast<size_t>(s.size) * sizeof(float))) {
    throw Error(ErrorCode::kDataLoss, "parameter " + s.FullName() + " checksum mismatch",
                {.file = file.path(), .key = name, .hint = "use an earlier checkpoint"});
  }
}

void ReadParams(const io::Hdf5File& file, const CheckpointPart& part, Contents* c) {
  const std::string& path = file.path();
  c->params.resize(static_cast<size_t>(part.arena_size));
  for (const ParamSpec& s : part.specs) {
    const std::string name = fmt::kParams + s.FullName();
    io::H5Id d = OpenShaped(file, name, s.FullShape(), "parameter");
    if (s.size == 0) continue;
    io::ReadSlab(file, d.get(), name, H5T_NATIVE_FLOAT,
                 cl::ParamSlab(s.FullShape(), s.split_axis, s.split_begin, Extent(s)),
                 c->params.data() + s.offset);
    CheckParamCrc(file, name, s, c->params.data() + s.offset);
  }
  if (IsWhole(part)) {
    const int64_t stored_params = io::ReadIntAttribute(file, "/", "num_params");
    if (stored_params != static_cast<int64_t>(part.specs.size())) {
      throw Error(ErrorCode::kInvalidArgument,
                  "checkpoint holds " + std::to_string(stored_params) +
                      " parameters but the model has " + std::to_string(part.specs.size()),
                  {.file = path, .hint = "use the model spec the checkpoint was written with"});
    }
    const uint32_t crc = static_cast<uint32_t>(io::ReadIntAttribute(file, "/", "params_crc32"));
    if (crc != Crc32(c->params.data(), c->params.size() * sizeof(float))) {
      throw Error(ErrorCode::kDataLoss, "parameter checksum mismatch", {.file = path});
    }
  }
  for (const NamedTensor& b : part.buffers) {
    c->buffers.emplace_back(static_cast<size_t>(b.tensor->num_elements()));
    ReadArray(file, fmt::kBuffers + b.name, H5T_NATIVE_FLOAT, b.tensor->shape(),
              c->buffers.back().data(), "buffer");
  }
}

// A checkpoint holding NaN or Inf: refused, never skipped for an earlier one by
// LoadLatestCheckpoint (unlike a damaged file, it was written whole, so it is not corruption).
class NonfiniteCheckpoint : public Error {
 public:
  using Error::Error;
};

void RefuseNonfinite(const std::string& path, const std::string& kind, const std::string& name,
                     const float* v, size_t n) {
  const float* bad = std::find_if(v, v + n, [](float x) { return !std::isfinite(x); });
  if (bad == v + n) return;
  throw NonfiniteCheckpoint(
      ErrorCode::kDataLoss,
      "checkpoint holds a non-finite value (" + std::to_string(*bad) + ") in " + kind + " " + name +
          " at element " + std::to_string(bad - v),
      {.file = path,
       .key = name,
       .hint = "it was written after the model diverged; use an earlier checkpoint"});
}

// Every tensor a load would apply, checked before the part is touched.
void CheckFinite(const std::string& path, const CheckpointPart& part, bool with_optimizer,
                 const Contents& c) {
  for (const ParamSpec& s : part.specs) {
    RefuseNonfinite(path, "parameter", s.FullName(), c.params.data() + s.offset,
                    static_cast<size_t>(s.size));
  }
  for (size_t i = 0; i < part.buffers.size() && i < c.buffers.size(); ++i) {
    RefuseNonfinite(path, "buffer", part.buffers[i].name, c.buffers[i].data(), c.buffers[i].size());
  }
  if (!with_optimizer || part.optimizer == nullptr) return;
  const std::vector<NamedTensor> slots = part.optimizer->Slots();
  for (size_t i = 0; i < slots.size() && i < c.slots.size(); ++i) {
    RefuseNonfinite(path, "optimizer slot", slots[i].name, c.slots[i].data(), c.slots[i].size());
  }
}

// Each of the part's parameters' offset in the whole arena (and so in each flat optimizer
// slot): the file's parameters of the layers after its layer, then its layer's parameters
// before it in declaration order (the part's, which holds whole layers).
std::vector<int64_t> WholeArenaOffsets(const io::Hdf5File& file, const CheckpointPart& part) {
  std::map<int, int64_t> layer_elements;  // layer -> elements of its parameters in the file
  const std::string head = std::string(fmt::kParams).substr(1);  // "params/"
  for (const io::Hdf5DatasetInfo& d : file.ListDatasets()) {
    if (d.name.compare(0, head.size(), head) != 0) continue;
    const std::string layer =
        d.name.substr(head.size(), d.name.find('/', head.size()) - head.size());
    const size_t digits = layer.find_first_not_of("0123456789");
    if (digits == 0 || digits == std::string::npos || layer[digits] != '_') {
      throw Error(ErrorCode::kInvalidArgument,
                  "cannot place parameter '/" + d.name +
                      "' in the optimizer slots: its layer "
                      "name does not start with the layer index",
                  {.file = file.path(), .key = d.name});
    }
    layer_elements[std::stoi(layer.substr(0, digits))] += NumElements(d.shape);
  }
  std::map<int, int64_t> held;  // layer -> elements of the part's parameters of it, so far
  std::vector<int64_t> out;
  for (const ParamSpec& s : part.specs) {
    int64_t offset = held[s.layer];
    for (auto it = layer_elements.upper_bound(s.layer); it != layer_elements.end(); ++it) {
      offset += it->second;
    }
    held[s.layer] += NumElements(s.FullShape());
    out.push_back(offset);
  }
  for (const auto& [layer, elements] : held) {
    if (layer_elements[layer] != elements) {
      throw Error(
          ErrorCode::kInvalidArgument,
          "layer " + std::to_string(layer) + "'s parameters have " +
              std::to_string(layer_elements[layer]) + " elements in the checkpoint but " +
              std::to_string(elements) + " in the model",
          {.file = file.path(), .hint = "use the model spec the checkpoint was written with"});
    }
  }
  return out;
}

void ReadOptimizer(const io::Hdf5File& file, const CheckpointPart& part, Contents* c) {
  const std::string& path = file.path();
  const std::string group = fmt::kOptimizer;
  if (!file.HasLink(group)) {
    throw Error(ErrorCode::kInvalidArgument, "checkpoint has no optimizer state",
                {.file = path, .hint = "load it as a warm start (weights only)"});
  }
  Optimizer& optimizer = *part.optimizer;
  const std::string name = io::ReadStringAttribute(file, group, "name");
  if (name != optimizer.name()) {
    throw Error(ErrorCode::kInvalidArgument,
                "checkpoint optimizer is " + name + " but the run uses " + optimizer.name(),
                {.file = path, .key = "optimizer"});
  }
  c->iterations = io::ReadIntAttribute(file, group, "iterations");
  const Shape slot_shape = {IsWhole(part) ? part.arena_size
                                          : io::ReadIntAttribute(file, "/", "arena_size")};
  // One read per slot: every parameter's slab, in whole-arena order (the part's arena order).
  const std::vector<int64_t> offsets = WholeArenaOffsets(file, part);
  std::vector<io::SlabPiece> pieces;
  for (size_t i = 0; i < part.specs.size(); ++i) {
    const ParamSpec& s = part.specs[i];
    if (s.size == 0) continue;
    pieces.push_back(
        {cl::SlotSlab(s.FullShape(), s.split_axis, s.split_begin, Extent(s), offsets[i]),
         s.offset});
  }
  std::sort(pieces.begin(), pieces.end(), [](const io::SlabPiece& a, const io::SlabPiece& b) {
    return a.slab.start[0] < b.slab.start[0];
  });
  for (const NamedTensor& slot : optimizer.Slots()) {
    const std::string dataset = group + "/" + slot.name;
    io::H5Id d = OpenShaped(file, dataset, slot_shape, "optimizer slot");
    c->slots.emplace_back(static_cast<size_t>(part.arena_size));
    io::ReadSlabs(file, d.get(), dataset, H5T_NATIVE_FLOAT, pieces, c->slots.back().data());
  }
}

Contents ReadContents(const std::string& path, const CheckpointPart& part, bool weights_only) {
  try {
    io::Hdf5File file = OpenCheckpoint(path);
    CheckFormat(file);
    Contents c;
    ReadParams(file, part, &c);
    if (weights_only) return c;
    if (part.optimizer != nullptr) ReadOptimizer(file, part, &c);
    c.state.step = io::ReadIntAttribute(file, "/", "step");
    c.state.epoch = io::ReadIntAttribute(file, "/", "epoch");
    c.state.seed = static_cast<uint64_t>(io::ReadIntAttribute(file, "/", "seed"));
    c.state.rng = ReadVector<uint64_t>(file, fmt::kRng, H5T_NATIVE_UINT64);
    c.state.iterator_state = ReadVector<uint8_t>(file, fmt::kIterator, H5T_NATIVE_UINT8);
    c.state.config_text = io::ReadStringDataset(file, fmt::kConfig);
    return c;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kIo) throw;
    // HDF5 read failures here are checksum failures or truncation: the file is damaged.
    throw Error(ErrorCode::kDataLoss,
                std::string("checkpoint is corrupt or truncated: ") + e.what(),
                {.file = path, .hint = "use an earlier checkpoint"});
  }
}

void Apply(Contents& c, const CheckpointPart& part, bool with_optimizer) {
  std::copy(c.params.begin(), c.params.end(), part.params);
  for (size_t i = 0; i < part.buffers.size(); ++i) {
    std::copy(c.buffers[i].begin(), c.buffers[i].end(), part.buffers[i].tensor->data<float>());
  }
  if (with_optimizer && part.optimizer != nullptr && !c.slots.empty()) {
    const std::vector<NamedTensor> slots = part.optimizer->Slots();
    for (size_t i = 0; i < slots.size(); ++i) {
      std::copy(c.slots[i].begin(), c.slots[i].end(), slots[i].tensor->data<float>());
    }
    part.optimizer->set_iterations(c.iterations);
  }
}

}  // namespace

TrainingState LoadCheckpoint(const std::string& path, const CheckpointPart& part) {
  Contents c = ReadContents(path, part, false);
  CheckFinite(path, part, true, c);
  Apply(c, part, true);
  return c.state;
}

void LoadWeights(const std::string& path, const CheckpointPart& part) {
  Contents c = ReadContents(path, part, true);
  CheckFinite(path, part, false, c);
  Apply(c, part, false);
}

// A model on a device loads into host copies of its state, then copies them over.
TrainingState LoadCheckpoint(const std::string& path, Sequential<float>& model,
                             Optimizer* optimizer) {
  HostStateScope on_host(model, optimizer);
  TrainingState state = LoadCheckpoint(path, MakeCheckpointPart(model, optimizer));
  on_host.CopyBack();
  return state;
}

void LoadWeights(const std::string& path, Sequential<float>& model) {
  HostStateScope on_host(model, nullptr);
  LoadWeights(path, MakeCheckpointPart(model, nullptr));
  on_host.CopyBack();
}

CheckpointInfo ReadCheckpointInfo(const std::string& path) {
  try {
    io::Hdf5File file = OpenCheckpoint(path);
    CheckFormat(file);
    CheckpointInfo info;
    info.step = io::ReadIntAttribute(file, "/", "step");
    info.epoch = io::ReadIntAttribute(file, "/", "epoch");
    info.model_spec = io::ReadStringAttribute(file, "/", "model_spec");
    info.input_shape = io::ReadStringAttribute(file, "/", "input_shape");
    if (file.HasLink(fmt::kOptimizer)) {
      info.optimizer = io::ReadStringAttribute(file, fmt::kOptimizer, "name");
    }
    if (file.HasLink(fmt::kConfig)) info.config_text = io::ReadStringDataset(file, fmt::kConfig);
    const std::string head = std::string(fmt::kParams).substr(1);
    for (const io::Hdf5DatasetInfo& d : file.ListDatasets()) {
      if (d.name.compare(0, head.size(), head) == 0) {
        info.params.emplace_back(d.name.substr(head.size()), d.shape);
      }
    }
    return info;
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kIo) throw;
    throw Error(ErrorCode::kDataLoss,
                std::string("checkpoint is corrupt or truncated: ") + e.what(),
                {.file = path, .hint = "use an earlier checkpoint"});
  }
}

std::string LoadLatestCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                                 Optimizer* optimizer, TrainingState* state) {
  HostStateScope on_host(model, optimizer);
  std::string path = LoadLatestCheckpoint(options, MakeCheckpointPart(model, optimizer), state);
  if (!path.empty()) on_host.CopyBack();
  return path;
}

std::string LoadLatestCheckpoint(const CheckpointOptions& options, const CheckpointPart& part,
                                 TrainingState* state) {
  const std::vector<std::string> all = ListCheckpoints(options);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      TrainingState s = LoadCheckpoint(*it, part);
      if (state != nullptr) *state = std::move(s);
      return *it;
    } catch (const NonfiniteCheckpoint&) {
      throw;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kDataLoss) throw;
      SF_LOG(Warn) << "skipping checkpoint " << *it << ": " << e.what();
    }
  }
  return "";
}

}  // namespace shardflow
