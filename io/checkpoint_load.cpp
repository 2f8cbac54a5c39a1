// Reading checkpoints: everything is read and verified into memory (Contents) before the model
// or optimizer is touched, so a refused file leaves them as they were.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/check_hdf5.hpp"
#include "core/logging.hpp"
#include "io/checkpoint.hpp"
#include "io/checkpoint_format.hpp"
#include "io/hdf5_objects.hpp"

namespace shardflow {
namespace {

namespace fmt = checkpoint_format;

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

// Reads dataset `name` of element type `type` whose shape must equal `want`.
void ReadArray(const io::Hdf5File& file, const std::string& name, hid_t type, const Shape& want,
               void* out, const std::string& what) {
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
  io::ReadWholeDataset(file, dataset.get(), name, type, out);
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

void ReadParams(const io::Hdf5File& file, Sequential<float>& model, Contents* c) {
  const std::string& path = file.path();
  Arena<float>& arena = model.arena();
  c->params.resize(static_cast<size_t>(arena.size()));
  for (const ParamSpec& s : arena.specs()) {
    ReadArray(file, fmt::kParams + s.FullName(), H5T_NATIVE_FLOAT, s.shape,
              c->params.data() + s.offset, "parameter");
  }
  const int64_t stored_params = io::ReadIntAttribute(file, "/", "num_params");
  if (stored_params != arena.num_params()) {
    throw Error(ErrorCode::kInvalidArgument,
                "checkpoint holds " + std::to_string(stored_params) +
                    " parameters but the model has " + std::to_string(arena.num_params()),
                {.file = path, .hint = "use the model spec the checkpoint was written with"});
  }
  const uint32_t crc = static_cast<uint32_t>(io::ReadIntAttribute(file, "/", "params_crc32"));
  if (crc != Crc32(c->params.data(), c->params.size() * sizeof(float))) {
    throw Error(ErrorCode::kDataLoss, "parameter checksum mismatch", {.file = path});
  }
  for (const NamedTensor& b : model.Buffers()) {
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

// Every tensor a load would apply, checked before the model is touched.
void CheckFinite(const std::string& path, Sequential<float>& model, Optimizer* optimizer,
                 const Contents& c) {
  const Arena<float>& arena = model.arena();
  for (const ParamSpec& s : arena.specs()) {
    RefuseNonfinite(path, "parameter", s.FullName(), c.params.data() + s.offset,
                    static_cast<size_t>(s.size));
  }
  const std::vector<NamedTensor> buffers = model.Buffers();
  for (size_t i = 0; i < buffers.size() && i < c.buffers.size(); ++i) {
    RefuseNonfinite(path, "buffer", buffers[i].name, c.buffers[i].data(), c.buffers[i].size());
  }
  if (optimizer == nullptr) return;
  const std::vector<NamedTensor> slots = optimizer->Slots();
  for (size_t i = 0; i < slots.size() && i < c.slots.size(); ++i) {
    RefuseNonfinite(path, "optimizer slot", slots[i].name, c.slots[i].data(), c.slots[i].size());
  }
}

void ReadOptimizer(const io::Hdf5File& file, Optimizer& optimizer, Contents* c) {
  const std::string& path = file.path();
  const std::string group = fmt::kOptimizer;
  if (!file.HasLink(group)) {
    throw Error(ErrorCode::kInvalidArgument, "checkpoint has no optimizer state",
                {.file = path, .hint = "load it as a warm start (weights only)"});
  }
  const std::string name = io::ReadStringAttribute(file, group, "name");
  if (name != optimizer.name()) {
    throw Error(ErrorCode::kInvalidArgument,
                "checkpoint optimizer is " + name + " but the run uses " + optimizer.name(),
                {.file = path, .key = "optimizer"});
  }
  c->iterations = io::ReadIntAttribute(file, group, "iterations");
  for (const NamedTensor& s : optimizer.Slots()) {
    c->slots.emplace_back(static_cast<size_t>(s.tensor->num_elements()));
    ReadArray(file, group + "/" + s.name, H5T_NATIVE_FLOAT, s.tensor->shape(),
              c->slots.back().data(), "optimizer slot");
  }
}

Contents ReadContents(const std::string& path, Sequential<float>& model, Optimizer* optimizer,
                      bool weights_only) {
  try {
    io::Hdf5File file = OpenCheckpoint(path);
    CheckFormat(file);
    Contents c;
    ReadParams(file, model, &c);
    if (weights_only) return c;
    if (optimizer != nullptr) ReadOptimizer(file, *optimizer, &c);
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

void Apply(Contents& c, Sequential<float>& model, Optimizer* optimizer) {
  Arena<float>& arena = model.arena();
  std::copy(c.params.begin(), c.params.end(), arena.params());
  const std::vector<NamedTensor> buffers = model.Buffers();
  for (size_t i = 0; i < buffers.size(); ++i) {
    std::copy(c.buffers[i].begin(), c.buffers[i].end(), buffers[i].tensor->data<float>());
  }
  if (optimizer != nullptr && !c.slots.empty()) {
    const std::vector<NamedTensor> slots = optimizer->Slots();
    for (size_t i = 0; i < slots.size(); ++i) {
      std::copy(c.slots[i].begin(), c.slots[i].end(), slots[i].tensor->data<float>());
    }
    optimizer->set_iterations(c.iterations);
  }
}

}  // namespace

TrainingState LoadCheckpoint(const std::string& path, Sequential<float>& model,
                             Optimizer* optimizer) {
  Contents c = ReadContents(path, model, optimizer, false);
  CheckFinite(path, model, optimizer, c);
  Apply(c, model, optimizer);
  return c.state;
}

void LoadWeights(const std::string& path, Sequential<float>& model) {
  Contents c = ReadContents(path, model, nullptr, true);
  CheckFinite(path, model, nullptr, c);
  Apply(c, model, nullptr);
}

std::string LoadLatestCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                                 Optimizer* optimizer, TrainingState* state) {
  const std::vector<std::string> all = ListCheckpoints(options);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      TrainingState s = LoadCheckpoint(*it, model, optimizer);
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
