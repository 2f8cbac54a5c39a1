#include "core/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "core/check_hdf5.hpp"
#include "core/logging.hpp"

namespace shardflow {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFormat = "shardflow-checkpoint";
constexpr int64_t kVersion = 1;
constexpr hsize_t kMaxChunkBytes = hsize_t{32} << 20;

// Closes an HDF5 handle on scope exit.
class H5Handle {
 public:
  H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~H5Handle() {
    if (id_ >= 0) close_(id_);
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  hid_t get() const { return id_; }
  // Closes now and reports failure (used for the file, whose close flushes data).
  void Close(const std::string& path) {
    const hid_t id = id_;
    id_ = -1;
    SF_CHECK_H5(close_(id), .file = path);
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

// ---- writing ----

void WriteArray(hid_t file, const std::string& path, const std::string& name, hid_t type,
                const void* data, const std::vector<hsize_t>& dims) {
  H5Handle lcpl(SF_CHECK_H5(H5Pcreate(H5P_LINK_CREATE), .file = path), H5Pclose);
  SF_CHECK_H5(H5Pset_create_intermediate_group(lcpl.get(), 1), .file = path);
  H5Handle space(SF_CHECK_H5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                             .file = path, .key = name),
                 H5Sclose);
  H5Handle dcpl(SF_CHECK_H5(H5Pcreate(H5P_DATASET_CREATE), .file = path), H5Pclose);
  hsize_t n = 1;
  for (hsize_t d : dims) n *= d;
  if (n > 0) {
    // Whole-dataset chunks (the first dimension capped to bound the chunk size), so the
    // Fletcher-32 checksum covers every byte.
    std::vector<hsize_t> chunk = dims;
    const hsize_t row_bytes = n / dims[0] * H5Tget_size(type);
    chunk[0] = std::max<hsize_t>(1, std::min<hsize_t>(dims[0], kMaxChunkBytes / row_bytes));
    SF_CHECK_H5(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()),
                .file = path, .key = name);
    SF_CHECK_H5(H5Pset_fletcher32(dcpl.get()), .file = path, .key = name);
  }
  H5Handle dset(SF_CHECK_H5(H5Dcreate2(file, name.c_str(), type, space.get(), lcpl.get(),
                                       dcpl.get(), H5P_DEFAULT),
                            .file = path, .key = name),
                H5Dclose);
  if (n > 0) {
    SF_CHECK_H5(H5Dwrite(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), .file = path,
                .key = name);
  }
}

std::vector<hsize_t> Dims(const Shape& shape) { return {shape.begin(), shape.end()}; }

void WriteAttr(hid_t loc, const std::string& path, const char* name, hid_t type,
               const void* value) {
  H5Handle space(SF_CHECK_H5(H5Screate(H5S_SCALAR), .file = path), H5Sclose);
  H5Handle attr(SF_CHECK_H5(H5Acreate2(loc, name, type, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                            .file = path, .key = name),
                H5Aclose);
  SF_CHECK_H5(H5Awrite(attr.get(), type, value), .file = path, .key = name);
}

void WriteAttrInt(hid_t loc, const std::string& path, const char* name, int64_t value) {
  WriteAttr(loc, path, name, H5T_NATIVE_INT64, &value);
}

void WriteAttrString(hid_t loc, const std::string& path, const char* name,
                     const std::string& value) {
  H5Handle type(SF_CHECK_H5(H5Tcopy(H5T_C_S1), .file = path), H5Tclose);
  SF_CHECK_H5(H5Tset_size(type.get(), std::max<size_t>(value.size(), 1)), .file = path);
  SF_CHECK_H5(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), .file = path);
  std::string padded = value;
  padded.resize(std::max<size_t>(value.size(), 1), '\0');
  WriteAttr(loc, path, name, type.get(), padded.data());
}

void WriteStringDataset(hid_t file, const std::string& path, const char* name,
                        const std::string& value) {
  H5Handle type(SF_CHECK_H5(H5Tcopy(H5T_C_S1), .file = path), H5Tclose);
  SF_CHECK_H5(H5Tset_size(type.get(), std::max<size_t>(value.size(), 1)), .file = path);
  SF_CHECK_H5(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), .file = path);
  H5Handle space(SF_CHECK_H5(H5Screate(H5S_SCALAR), .file = path), H5Sclose);
  H5Handle dset(SF_CHECK_H5(H5Dcreate2(file, name, type.get(), space.get(), H5P_DEFAULT,
                                       H5P_DEFAULT, H5P_DEFAULT),
                            .file = path, .key = name),
                H5Dclose);
  std::string padded = value;
  padded.resize(std::max<size_t>(value.size(), 1), '\0');
  SF_CHECK_H5(H5Dwrite(dset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, padded.data()),
              .file = path, .key = name);
}

uint32_t Crc32(const void* data, size_t bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = static_cast<const Bytef*>(data);
  while (bytes > 0) {
    const uInt n = static_cast<uInt>(std::min<size_t>(bytes, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    bytes -= n;
  }
  return static_cast<uint32_t>(crc);
}

void FsyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    throw Error(ErrorCode::kIo, std::string("fsync failed: ") + std::strerror(err), {.file = path});
  }
  ::close(fd);
}

std::string CheckpointName(const CheckpointOptions& o, int64_t step) {
  std::ostringstream s;
  s << o.prefix << '-' << std::setw(9) << std::setfill('0') << step << ".h5";
  return s.str();
}

// ---- reading ----

H5Handle OpenFile(const std::string& path) {
  if (!fs::exists(path)) {
    throw Error(ErrorCode::kNotFound, "checkpoint does not exist", {.file = path});
  }
  SilenceHdf5Errors();
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) {
    throw Error(ErrorCode::kDataLoss,
                "cannot open checkpoint: truncated, corrupt or not an HDF5 file (HDF5: " +
                    TakeHdf5ErrorStack() + ")",
                {.file = path, .hint = "use an earlier checkpoint"});
  }
  return H5Handle(id, H5Fclose);
}

bool Exists(hid_t file, const std::string& name) {
  // Checks each level so a missing group is not an error.
  size_t pos = 0;
  while (true) {
    pos = name.find('/', pos + 1);
    const std::string prefix = name.substr(0, pos);
    if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (pos == std::string::npos) return true;
  }
}

// Reads dataset `name` of element type `type` whose shape must equal `want`.
void ReadArray(hid_t file, const std::string& path, const std::string& name, hid_t type,
               const Shape& want, void* out, const std::string& what) {
  if (!Exists(file, name)) {
    throw Error(ErrorCode::kInvalidArgument, "checkpoint has no " + what + " '" + name + "'",
                {.file = path,
                 .key = name,
                 .hint = "was it written by a different model? use the same model spec"});
  }
  H5Handle dset(SF_CHECK_H5(H5Dopen2(file, name.c_str(), H5P_DEFAULT), .file = path, .key = name),
                H5Dclose);
  H5Handle space(SF_CHECK_H5(H5Dget_space(dset.get()), .file = path, .key = name), H5Sclose);
  const int rank = SF_CHECK_H5(H5Sget_simple_extent_ndims(space.get()), .file = path, .key = name);
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  SF_CHECK_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), .file = path,
              .key = name);
  const Shape got(dims.begin(), dims.end());
  if (got != want) {
    throw Error(ErrorCode::kInvalidArgument,
                what + " " + name + " has shape " + ShapeToString(got) + " in the checkpoint but " +
                    ShapeToString(want) + " in the model",
                {.file = path, .key = name});
  }
  if (NumElements(want) > 0) {
    SF_CHECK_H5(H5Dread(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out), .file = path,
                .key = name);
  }
}

// A 1-D dataset of any length.
template <typename V>
std::vector<V> ReadVector(hid_t file, const std::string& path, const std::string& name,
                          hid_t type) {
  H5Handle dset(SF_CHECK_H5(H5Dopen2(file, name.c_str(), H5P_DEFAULT), .file = path, .key = name),
                H5Dclose);
  H5Handle space(SF_CHECK_H5(H5Dget_space(dset.get()), .file = path, .key = name), H5Sclose);
  const hssize_t n =
      SF_CHECK_H5(H5Sget_simple_extent_npoints(space.get()), .file = path, .key = name);
  std::vector<V> out(static_cast<size_t>(n));
  if (n > 0) {
    SF_CHECK_H5(H5Dread(dset.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), .file = path,
                .key = name);
  }
  return out;
}

int64_t ReadAttrInt(hid_t loc, const std::string& path, const char* name) {
  H5Handle attr(SF_CHECK_H5(H5Aopen(loc, name, H5P_DEFAULT), .file = path, .key = name), H5Aclose);
  int64_t v = 0;
  SF_CHECK_H5(H5Aread(attr.get(), H5T_NATIVE_INT64, &v), .file = path, .key = name);
  return v;
}

std::string ReadString(hid_t obj, bool is_attr, const std::string& path, const char* name) {
  H5Handle h(is_attr ? SF_CHECK_H5(H5Aopen(obj, name, H5P_DEFAULT), .file = path, .key = name)
                     : SF_CHECK_H5(H5Dopen2(obj, name, H5P_DEFAULT), .file = path, .key = name),
             is_attr ? H5Aclose : H5Dclose);
  H5Handle type(is_attr ? SF_CHECK_H5(H5Aget_type(h.get()), .file = path, .key = name)
                        : SF_CHECK_H5(H5Dget_type(h.get()), .file = path, .key = name),
                H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0) {
    throw Error(ErrorCode::kDataLoss, std::string("'") + name + "' is not a fixed-length string",
                {.file = path, .key = name});
  }
  std::string s(H5Tget_size(type.get()), '\0');
  if (is_attr) {
    SF_CHECK_H5(H5Aread(h.get(), type.get(), s.data()), .file = path, .key = name);
  } else {
    SF_CHECK_H5(H5Dread(h.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data()), .file = path,
                .key = name);
  }
  s.resize(std::strlen(s.c_str()));
  return s;
}

// Everything a checkpoint holds, read and verified before anything is applied.
struct Contents {
  std::vector<float> params;
  std::vector<std::vector<float>> buffers;
  std::vector<std::vector<float>> slots;
  int64_t iterations = 0;
  TrainingState state;
};

Contents ReadContents(const std::string& path, Sequential<float>& model, Optimizer* optimizer,
                      bool weights_only) {
  try {
    H5Handle file = OpenFile(path);
    const hid_t f = file.get();
    if (H5Aexists(f, "format") <= 0 || ReadString(f, true, path, "format") != kFormat) {
      throw Error(ErrorCode::kInvalidArgument, "not a shardflow checkpoint (no format attribute)",
                  {.file = path});
    }
    const int64_t version = ReadAttrInt(f, path, "version");
    if (version != kVersion) {
      throw Error(ErrorCode::kInvalidArgument,
                  "checkpoint format version " + std::to_string(version) + " is not supported",
                  {.file = path, .hint = "this build reads version 1"});
    }
    Arena<float>& arena = model.arena();
    Contents c;
    c.params.resize(static_cast<size_t>(arena.size()));
    for (const ParamSpec& s : arena.specs()) {
      ReadArray(f, path, "/params/" + s.FullName(), H5T_NATIVE_FLOAT, s.shape,
                c.params.data() + s.offset, "parameter");
    }
    const int64_t stored_params = ReadAttrInt(f, path, "num_params");
    if (stored_params != arena.num_params()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "checkpoint holds " + std::to_string(stored_params) +
                      " parameters but the model has " + std::to_string(arena.num_params()),
                  {.file = path, .hint = "use the model spec the checkpoint was written with"});
    }
    const uint32_t crc = static_cast<uint32_t>(ReadAttrInt(f, path, "params_crc32"));
    if (crc != Crc32(c.params.data(), c.params.size() * sizeof(float))) {
      throw Error(ErrorCode::kDataLoss, "parameter checksum mismatch", {.file = path});
    }
    for (const NamedTensor& b : model.Buffers()) {
      c.buffers.emplace_back(static_cast<size_t>(b.tensor->num_elements()));
      ReadArray(f, path, "/buffers/" + b.name, H5T_NATIVE_FLOAT, b.tensor->shape(),
                c.buffers.back().data(), "buffer");
    }
    if (weights_only) return c;
    if (optimizer != nullptr) {
      if (!Exists(f, "/optimizer")) {
        throw Error(ErrorCode::kInvalidArgument, "checkpoint has no optimizer state",
                    {.file = path, .hint = "load it as a warm start (weights only)"});
      }
      H5Handle g(SF_CHECK_H5(H5Gopen2(f, "/optimizer", H5P_DEFAULT), .file = path), H5Gclose);
      const std::string name = ReadString(g.get(), true, path, "name");
      if (name != optimizer->name()) {
        throw Error(ErrorCode::kInvalidArgument,
                    "checkpoint optimizer is " + name + " but the run uses " + optimizer->name(),
                    {.file = path, .key = "optimizer"});
      }
      c.iterations = ReadAttrInt(g.get(), path, "iterations");
      for (const NamedTensor& s : optimizer->Slots()) {
        c.slots.emplace_back(static_cast<size_t>(s.tensor->num_elements()));
        ReadArray(f, path, "/optimizer/" + s.name, H5T_NATIVE_FLOAT, s.tensor->shape(),
                  c.slots.back().data(), "optimizer slot");
      }
    }
    c.state.step = ReadAttrInt(f, path, "step");
    c.state.epoch = ReadAttrInt(f, path, "epoch");
    c.state.seed = static_cast<uint64_t>(ReadAttrInt(f, path, "seed"));
    c.state.rng = ReadVector<uint64_t>(f, path, "/state/rng", H5T_NATIVE_UINT64);
    c.state.iterator_state = ReadVector<uint8_t>(f, path, "/state/iterator", H5T_NATIVE_UINT8);
    c.state.config_text = ReadString(f, false, path, "/config");
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

std::string SaveCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                           Optimizer* optimizer, const TrainingState& state) {
  if (options.dir.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "checkpoint directory is not set",
                {.key = "checkpoint.dir"});
  }
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) {
    throw Error(ErrorCode::kIo, "cannot create checkpoint directory: " + ec.message(),
                {.file = options.dir});
  }
  const std::string final_path = (fs::path(options.dir) / CheckpointName(options, state.step));
  const std::string tmp = final_path + ".tmp." + std::to_string(::getpid());
  try {
    H5Handle fapl(SF_CHECK_H5(H5Pcreate(H5P_FILE_ACCESS), .file = tmp), H5Pclose);
    SF_CHECK_H5(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), .file = tmp);
    H5Handle file(
        SF_CHECK_H5(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), .file = tmp),
        H5Fclose);
    const hid_t f = file.get();
    Arena<float>& arena = model.arena();
    for (const ParamSpec& s : arena.specs()) {
      WriteArray(f, tmp, "/params/" + s.FullName(), H5T_NATIVE_FLOAT, arena.params() + s.offset,
                 Dims(s.shape));
    }
    for (const NamedTensor& b : model.Buffers()) {
      WriteArray(f, tmp, "/buffers/" + b.name, H5T_NATIVE_FLOAT, b.tensor->data<float>(),
                 Dims(b.tensor->shape()));
    }
    if (optimizer != nullptr) {
      for (const NamedTensor& s : optimizer->Slots()) {
        WriteArray(f, tmp, "/optimizer/" + s.name, H5T_NATIVE_FLOAT, s.tensor->data<float>(),
                   Dims(s.tensor->shape()));
      }
      H5Handle g(
          H5Lexists(f, "/optimizer", H5P_DEFAULT) > 0
              ? SF_CHECK_H5(H5Gopen2(f, "/optimizer", H5P_DEFAULT), .file = tmp)
              : SF_CHECK_H5(H5Gcreate2(f, "/optimizer", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                            .file = tmp),
          H5Gclose);
      WriteAttrString(g.get(), tmp, "name", optimizer->name());
      WriteAttrInt(g.get(), tmp, "iterations", optimizer->iterations());
    }
    WriteArray(f, tmp, "/state/rng", H5T_NATIVE_UINT64, state.rng.data(), {state.rng.size()});
    WriteArray(f, tmp, "/state/iterator", H5T_NATIVE_UINT8, state.iterator_state.data(),
               {state.iterator_state.size()});
    WriteStringDataset(f, tmp, "/config", state.config_text);
    WriteAttrString(f, tmp, "format", kFormat);
    WriteAttrInt(f, tmp, "version", kVersion);
    WriteAttrInt(f, tmp, "step", state.step);
    WriteAttrInt(f, tmp, "epoch", state.epoch);
    WriteAttrInt(f, tmp, "seed", static_cast<int64_t>(state.seed));
    WriteAttrString(f, tmp, "model_spec", model.spec());
    WriteAttrString(f, tmp, "input_shape", ShapeToString(model.input_shape()));
    WriteAttrInt(f, tmp, "num_params", arena.num_params());
    WriteAttrInt(f, tmp, "arena_size", arena.size());
    WriteAttrInt(f, tmp, "params_crc32",
                 Crc32(arena.params(), static_cast<size_t>(arena.size()) * sizeof(float)));
    file.Close(tmp);
    FsyncPath(tmp, false);
    if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
      throw Error(ErrorCode::kIo, std::string("rename failed: ") + std::strerror(errno),
                  {.file = final_path});
    }
    FsyncPath(options.dir, true);
  } catch (...) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw;
  }
  if (options.keep_last > 0) {
    std::vector<std::string> all = ListCheckpoints(options);
    for (size_t i = 0; i + static_cast<size_t>(options.keep_last) < all.size(); ++i) {
      std::error_code ignored;
      fs::remove(all[i], ignored);
    }
  }
  return final_path;
}

TrainingState LoadCheckpoint(const std::string& path, Sequential<float>& model,
                             Optimizer* optimizer) {
  Contents c = ReadContents(path, model, optimizer, false);
  Apply(c, model, optimizer);
  return c.state;
}

void LoadWeights(const std::string& path, Sequential<float>& model) {
  Contents c = ReadContents(path, model, nullptr, true);
  Apply(c, model, nullptr);
}

std::vector<std::string> ListCheckpoints(const CheckpointOptions& options) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  if (!fs::is_directory(options.dir, ec)) return {};
  const std::string head = options.prefix + "-";
  for (const auto& entry : fs::directory_iterator(options.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= head.size() + 3 || name.compare(0, head.size(), head) != 0 ||
        name.compare(name.size() - 3, 3, ".h5") != 0) {
      continue;
    }
    const std::string digits = name.substr(head.size(), name.size() - head.size() - 3);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit)) continue;
    found.emplace_back(std::stoll(digits), entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [step, path] : found) out.push_back(path);
  return out;
}

std::string LoadLatestCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                                 Optimizer* optimizer, TrainingState* state) {
  const std::vector<std::string> all = ListCheckpoints(options);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      TrainingState s = LoadCheckpoint(*it, model, optimizer);
      if (state != nullptr) *state = std::move(s);
      return *it;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kDataLoss) throw;
      SF_LOG(Warn) << "skipping checkpoint " << *it << ": " << e.what();
    }
  }
  return "";
}

}  // namespace shardflow
