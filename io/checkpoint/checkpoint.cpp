// Writing checkpoints: SaveCheckpoint is the collective save over the calling process alone,
// owning the whole arena, so both writers share one code path and produce the same layout.
//
// A collective save runs in phases, each ending in an agreement so that a failure on any rank
// becomes an error on every rank before the next collective step:
//   1. agree: all-gather each rank's model summary and owned slices (with their CRCs); every
//      rank checks the same data (models alike, slices cover the arena once) and so throws the
//      same error; every rank checks that what it writes is finite (a NaN or Inf is an error
//      naming the tensor, and nothing is written); rank 0 creates the directory and picks the
//      temporary name;
//   2. share: rank 0's metadata (state, spec, optimizer name) is broadcast, since HDF5's
//      metadata calls must be made with equal values on every rank;
//   3. write: every rank creates every object and writes its own slices; rank 0 writes buffers,
//      state and config; the file is closed (collective) and fsync'ed by every rank;
//   4. publish: rank 0 renames the file into place, fsyncs the directory and prunes.
#include "io/checkpoint/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <sstream>

#include "core/fault_injection.hpp"
#include "core/host_state.hpp"
#include "core/mpi_env.hpp"
#include "io/checkpoint/format.hpp"
#include "io/checkpoint/internal.hpp"
#include "io/hdf5/objects.hpp"

namespace shardflow {
namespace {

namespace fs = std::filesystem;
namespace fmt = checkpoint_format;
using checkpoint_internal::RootMeta;

void PutPiece(std::string* out, const void* data, size_t bytes) {
  const uint64_t length = bytes;
  out->append(reinterpret_cast<const char*>(&length), sizeof(length));
  out->append(static_cast<const char*>(data), bytes);
}

std::string TakePiece(const std::string& in, size_t* pos) {
  uint64_t length = 0;
  std::memcpy(&length, in.data() + *pos, sizeof(length));
  std::string piece = in.substr(*pos + sizeof(length), length);
  *pos += sizeof(length) + length;
  return piece;
}

template <typename V>
void PutVector(std::string* out, const std::vector<V>& v) {
  PutPiece(out, v.data(), v.size() * sizeof(V));
}

template <typename V>
std::vector<V> TakeVector(const std::string& in, size_t* pos) {
  const std::string bytes = TakePiece(in, pos);
  std::vector<V> v(bytes.size() / sizeof(V));
  if (!v.empty()) std::memcpy(v.data(), bytes.data(), v.size() * sizeof(V));
  return v;
}

}  // namespace

namespace checkpoint_internal {

RootMeta ShareRootMeta(io::Communicator comm, Optimizer* optimizer, const TrainingState& state,
                       const std::string& model_spec, const std::string& input_shape) {
  std::string bytes;
  if (io::CommRank(comm) == 0) {
    const int64_t ints[4] = {state.step, state.epoch, static_cast<int64_t>(state.seed),
                             optimizer != nullptr ? optimizer->iterations() : 0};
    PutPiece(&bytes, ints, sizeof(ints));
    PutVector(&bytes, state.rng);
    const uint64_t iterator_bytes = state.iterator_state.size();
    PutPiece(&bytes, &iterator_bytes, sizeof(iterator_bytes));
    for (const std::string& s : {state.config_text, model_spec, input_shape,
                                 optimizer != nullptr ? optimizer->name() : std::string()}) {
      PutPiece(&bytes, s.data(), s.size());
    }
  }
  io::Broadcast(comm, &bytes, 0);
  RootMeta m;
  size_t pos = 0;
  const std::vector<int64_t> ints = TakeVector<int64_t>(bytes, &pos);
  m.state.step = ints.at(0);
  m.state.epoch = ints.at(1);
  m.state.seed = static_cast<uint64_t>(ints.at(2));
  m.iterations = ints.at(3);
  m.state.rng = TakeVector<uint64_t>(bytes, &pos);
  m.iterator_bytes = TakeVector<uint64_t>(bytes, &pos).at(0);
  if (io::CommRank(comm) == 0) m.iterator_state = &state.iterator_state;
  m.state.config_text = TakePiece(bytes, &pos);
  m.model_spec = TakePiece(bytes, &pos);
  m.input_shape = TakePiece(bytes, &pos);
  m.optimizer_name = TakePiece(bytes, &pos);
  return m;
}

}  // namespace checkpoint_internal

namespace {

// What a rank contributes to phase 1: its model's structure, the number of its slices, then
// (offset, size) per slice and (offset, size, crc) per piece: a slice cut at parameter
// boundaries, so that both the arena's CRC and each parameter's can be assembled.
constexpr size_t kSummaryHeader = 5;

std::vector<int64_t> LocalSummary(Sequential<float>& model, Optimizer* optimizer,
                                  const std::vector<ArenaSlice>& owned) {
  Arena<float>& arena = model.arena();
  int64_t slots = -1;  // no optimizer
  int64_t odd_slots = 0;
  if (optimizer != nullptr) {
    const std::vector<NamedTensor> all = optimizer->Slots();
    slots = static_cast<int64_t>(all.size());
    for (const NamedTensor& s : all) odd_slots += s.tensor->num_elements() != arena.size();
  }
  std::vector<int64_t> out = {
      arena.size(), arena.num_params(), static_cast<int64_t>(model.Buffers().size()),
      slots,        odd_slots,          static_cast<int64_t>(owned.size())};
  for (const ArenaSlice& s : owned) out.insert(out.end(), {s.offset, s.size});
  for (const ArenaSlice& s : owned) {
    const bool inside = s.offset >= 0 && s.size > 0 && s.offset <= arena.size() &&
                        s.size <= arena.size() - s.offset;
    if (!inside) continue;
    for (const ParamSpec& p : arena.specs()) {
      const int64_t begin = std::max(s.offset, p.offset);
      const int64_t end = std::min(s.offset + s.size, p.offset + p.size);
      if (begin >= end) continue;
      const uint32_t crc =
          Crc32(arena.params() + begin, static_cast<size_t>(end - begin) * sizeof(float));
      out.insert(out.end(), {begin, end - begin, static_cast<int64_t>(crc)});
    }
  }
  return out;
}

// Phase 1 checks, on the summaries of every rank (so every rank reaches the same verdict).
// Fills `crcs` with every rank's piece CRCs.
Status CheckSummaries(const std::vector<std::vector<int64_t>>& all, std::vector<SliceCrc>* crcs) {
  const char* what[kSummaryHeader] = {"arena elements", "parameters", "buffers",
                                      "optimizer slots (-1: none)", "slots not arena-sized"};
  std::vector<std::vector<ArenaSlice>> by_rank(all.size());
  for (size_t r = 0; r < all.size(); ++r) {
    for (size_t i = 0; i < kSummaryHeader; ++i) {
      if (all[r][i] != all[0][i]) {
        return Status(ErrorCode::kInvalidArgument,
                      "rank " + std::to_string(r) + "'s model has " + std::to_string(all[r][i]) +
                          " " + what[i] + " but rank 0's has " + std::to_string(all[0][i]),
                      {.hint = "every rank of a collective checkpoint passes the same model "
                               "and optimizer kind, each with arena-sized slots"});
      }
    }
    const size_t slices = static_cast<size_t>(all[r].at(kSummaryHeader));
    const size_t pieces = kSummaryHeader + 1 + 2 * slices;
    for (size_t i = kSummaryHeader + 1; i < pieces; i += 2) {
      by_rank[r].push_back({all[r][i], all[r][i + 1]});
    }
    for (size_t i = pieces; i + 2 < all[r].size(); i += 3) {
      crcs->push_back({all[r][i], all[r][i + 1], static_cast<uint32_t>(all[r][i + 2])});
    }
  }
  if (all[0][4] > 0) {
    return Status(ErrorCode::kInvalidArgument,
                  "the optimizer has " + std::to_string(all[0][4]) +
                      " slots that are not arena-sized; checkpoints slice slots like the arena");
  }
  return CheckArenaCoverage(by_rank, all[0][0]);
}

using checkpoint_internal::CheckFinite;
using checkpoint_internal::Dims;

Status CheckFiniteContents(Sequential<float>& model, Optimizer* optimizer,
                           const std::vector<ArenaSlice>& owned, const std::string& path) {
  const Arena<float>& arena = model.arena();
  for (const ParamSpec& s : arena.specs()) {
    for (const ArenaSlice& o : owned) {
      const int64_t begin = std::max(s.offset, o.offset);
      const int64_t end = std::min(s.offset + s.size, o.offset + o.size);
      if (begin >= end) continue;
      Status st = CheckFinite("parameter", s.FullName(), arena.params() + begin, end - begin, path);
      if (!st.ok()) return st;
    }
  }
  for (const NamedTensor& b : model.Buffers()) {
    Status st =
        CheckFinite("buffer", b.name, b.tensor->data<float>(), b.tensor->num_elements(), path);
    if (!st.ok()) return st;
  }
  if (optimizer == nullptr) return Status::Ok();
  for (const NamedTensor& s : optimizer->Slots()) {
    for (const ArenaSlice& o : owned) {
      const int64_t end = std::min(o.offset + o.size, s.tensor->num_elements());
      if (o.offset >= end) continue;
      Status st = CheckFinite("optimizer slot", s.name, s.tensor->data<float>() + o.offset,
                              end - o.offset, path);
      if (!st.ok()) return st;
    }
  }
  return Status::Ok();
}

// The part of the owned slices (sorted) that falls in [offset, offset + size), relative to offset.
std::vector<io::FlatRange> Intersect(const std::vector<ArenaSlice>& owned, int64_t offset,
                                     int64_t size) {
  std::vector<io::FlatRange> out;
  for (const ArenaSlice& s : owned) {
    const int64_t begin = std::max(s.offset, offset);
    const int64_t end = std::min(s.offset + s.size, offset + size);
    if (begin < end) out.push_back({begin - offset, end - offset});
  }
  return out;
}

// Phase 3: every object of the layout; data from `owned` (sorted) and, on rank 0, the rest.
void WriteContents(const io::Hdf5File& file, Sequential<float>& model, Optimizer* optimizer,
                   const RootMeta& meta, const std::vector<ArenaSlice>& owned,
                   const std::vector<SliceCrc>& pieces) {
  Arena<float>& arena = model.arena();
  for (const ParamSpec& s : arena.specs()) {
    const std::string name = fmt::kParams + s.FullName();
    io::H5Id d = io::CreateChecksummedDataset(file, name, H5T_NATIVE_FLOAT, Dims(s.shape),
                                              fmt::kMaxChunkBytes);
    if (s.size > 0) {
      io::WriteFlatRanges(file, d.get(), name, H5T_NATIVE_FLOAT, arena.params() + s.offset,
                          Intersect(owned, s.offset, s.size));
    }
    std::vector<SliceCrc> mine;  // the pieces of this parameter, relative to it
    for (const SliceCrc& p : pieces) {
      if (p.offset >= s.offset && p.offset < s.offset + s.size) {
        mine.push_back({p.offset - s.offset, p.size, p.crc});
      }
    }
    io::WriteAttribute(file, name, fmt::kParamCrc,
                       static_cast<int64_t>(CombineSliceCrcs(std::move(mine))));
  }
  // Everything below the arena is rank 0's to write.
  for (const NamedTensor& b : model.Buffers()) {
    checkpoint_internal::WriteByOneRank(file, fmt::kBuffers + b.name, H5T_NATIVE_FLOAT,
                                        b.tensor->data<float>(), Dims(b.tensor->shape()), 0);
  }
  if (!meta.optimizer_name.empty()) {
    for (const NamedTensor& s : optimizer->Slots()) {
      const std::string name = std::string(fmt::kOptimizer) + "/" + s.name;
      io::H5Id d = io::CreateChecksummedDataset(file, name, H5T_NATIVE_FLOAT,
                                                Dims(s.tensor->shape()), fmt::kMaxChunkBytes);
      if (arena.size() > 0) {
        io::WriteFlatRanges(file, d.get(), name, H5T_NATIVE_FLOAT, s.tensor->data<float>(),
                            Intersect(owned, 0, arena.size()));
      }
    }
  }
  checkpoint_internal::WriteRootObjects(file, meta, arena.num_params(), arena.size(),
                                        CombineSliceCrcs(pieces));
}

}  // namespace

namespace checkpoint_internal {

std::vector<hsize_t> Dims(const Shape& shape) { return {shape.begin(), shape.end()}; }

Status CheckFinite(const std::string& kind, const std::string& name, const float* v, int64_t n,
                   const std::string& path) {
  const float* bad = std::find_if(v, v + n, [](float x) { return !std::isfinite(x); });
  if (bad == v + n) return Status::Ok();
  return Status(ErrorCode::kDataLoss,
                "non-finite value (" + std::to_string(*bad) + ") in " + kind + " " + name +
                    " at element " + std::to_string(bad - v) +
                    "; checkpoint not written, earlier ones kept",
                {.file = path,
                 .key = name,
                 .hint = "the model diverged: lower train.lr, set train.clip_norm or "
                         "train.warmup_steps, and resume from the last good checkpoint"});
}

// The iterator states' chunks: small, so that writing them in parallel (which buffers the
// chunks of a call, filtered and unfiltered) costs a few MiB beyond the states themselves.
constexpr int64_t kIteratorChunkBytes = int64_t{4} << 20;

void WriteByOneRank(const io::Hdf5File& file, const std::string& name, hid_t type, const void* data,
                    const std::vector<hsize_t>& dims, int writer, int64_t chunk_bytes) {
  io::H5Id d = io::CreateChecksummedDataset(file, name, type, dims, chunk_bytes);
  int64_t n = 1;
  for (hsize_t x : dims) n *= static_cast<int64_t>(x);
  if (n == 0) return;
  // One chunk's worth per (collective) call: parallel HDF5 buffers every filtered chunk a call
  // touches, so a large dataset written in one call (the iterator states) would cost its size
  // again in memory; in pieces the extra memory stays about one chunk.
  const int64_t row = dims.empty() ? 1 : n / static_cast<int64_t>(dims[0]);
  const int64_t element = static_cast<int64_t>(H5Tget_size(type));
  const int64_t piece = std::max<int64_t>(1, chunk_bytes / (row * element)) * row;
  for (int64_t begin = 0; begin < n; begin += piece) {
    const int64_t end = std::min(n, begin + piece);
    io::WriteFlatRanges(file, d.get(), name, type, data,
                        file.rank() == writer ? std::vector<io::FlatRange>{{begin, end}}
                                              : std::vector<io::FlatRange>{});
  }
}

void WriteRootObjects(const io::Hdf5File& file, const RootMeta& meta, int64_t num_params,
                      int64_t arena_size, uint32_t crc) {
  if (!meta.optimizer_name.empty()) {
    const std::string group = fmt::kOptimizer;
    if (!file.HasLink(group)) io::CreateGroup(file, group);
    io::WriteAttribute(file, group, "name", meta.optimizer_name);
    io::WriteAttribute(file, group, "iterations", meta.iterations);
  }
  const TrainingState& st = meta.state;
  WriteByOneRank(file, fmt::kRng, H5T_NATIVE_UINT64, st.rng.data(), {st.rng.size()}, 0);
  WriteByOneRank(file, fmt::kIterator, H5T_NATIVE_UINT8,
                 meta.iterator_state != nullptr ? meta.iterator_state->data() : nullptr,
                 {meta.iterator_bytes}, 0, kIteratorChunkBytes);
  io::WriteStringDataset(file, fmt::kConfig, st.config_text);
  io::WriteAttribute(file, "/", "format", std::string(fmt::kFormat));
  io::WriteAttribute(file, "/", "version", fmt::kVersion);
  io::WriteAttribute(file, "/", "step", st.step);
  io::WriteAttribute(file, "/", "epoch", st.epoch);
  io::WriteAttribute(file, "/", "seed", static_cast<int64_t>(st.seed));
  io::WriteAttribute(file, "/", "model_spec", meta.model_spec);
  io::WriteAttribute(file, "/", "input_shape", meta.input_shape);
  io::WriteAttribute(file, "/", "num_params", num_params);
  io::WriteAttribute(file, "/", "arena_size", arena_size);
  io::WriteAttribute(file, "/", "params_crc32", static_cast<int64_t>(crc));
}

}  // namespace checkpoint_internal

namespace {

Status FsyncPath(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    return Status(ErrorCode::kIo, std::string("fsync failed: ") + std::strerror(err),
                  {.file = path});
  }
  ::close(fd);
  return Status::Ok();
}

std::string CheckpointName(const CheckpointOptions& o, int64_t step) {
  std::ostringstream s;
  s << o.prefix << '-' << std::setw(9) << std::setfill('0') << step << ".h5";
  return s.str();
}

// Phase 1 on rank 0: the directory.
Status PrepareDirectory(const CheckpointOptions& options) {
  std::error_code ec;
  fs::create_directories(options.dir, ec);
  if (ec) {
    return Status(ErrorCode::kIo, "cannot create checkpoint directory: " + ec.message(),
                  {.file = options.dir});
  }
  return Status::Ok();
}

// Test-only fault injection (core/fault_injection.hpp, SHARDFLOW_TEST_CHECKPOINT_FAULT): each
// phase below is a fault point, reached with the number of the checkpoints this process has
// begun (1-based). Whatever the phase a process dies at, a resume must find an intact
// checkpoint: the previous one, or this one once renamed. The first point, kCheckpointWrite, is
// reached by every saving rank inside the agreed part, so a malformed value ends them together.
int saves_started = 0;

// Phases 3 and 4 for the file at `tmp`; rank 0 publishes it as `final_path`.
void WriteAndPublish(io::Communicator comm, const std::string& tmp, const std::string& final_path,
                     const CheckpointOptions& options,
                     const std::function<void(const io::Hdf5File&)>& write) {
  Status local;
  // An error here is agreed on below: closing the file while it unwinds is matched by the others.
  const CollectiveRecovery recovery;
  try {
    io::Hdf5File file = io::Hdf5File::Create(tmp, comm, {.checksummed_metadata = true});
    write(file);
    const int rank = io::CommRank(comm);
    fault::At(fault::Point::kCheckpointWrite, {.rank = rank, .index = saves_started, .file = tmp});
    file.Close();
    fault::At(fault::Point::kCheckpointFsync, {.rank = rank, .index = saves_started});
    local = FsyncPath(tmp, false);
  } catch (const Error& e) {
    local = e.status();
  }
  io::AgreeOnStatus(comm, local);
  if (io::CommRank(comm) == 0) {
    local = Status::Ok();
    fault::At(fault::Point::kCheckpointRename, {.rank = 0, .index = saves_started});
    if (std::rename(tmp.c_str(), final_path.c_str()) != 0) {
      local = Status(ErrorCode::kIo, std::string("rename failed: ") + std::strerror(errno),
                     {.file = final_path});
    } else {
      fault::At(fault::Point::kCheckpointPublished, {.rank = 0, .index = saves_started});
      local = FsyncPath(options.dir, true);
    }
  }
  io::AgreeOnStatus(comm, local);
}

}  // namespace

namespace checkpoint_internal {

void CheckOptions(const CheckpointOptions& options) {
  if (options.dir.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "checkpoint directory is not set",
                {.key = "checkpoint.dir"});
  }
}

std::string CheckpointPath(const CheckpointOptions& options, int64_t step) {
  return fs::path(options.dir) / CheckpointName(options, step);
}

void PublishCheckpoint(io::Communicator comm, const CheckpointOptions& options,
                       const std::string& final_path,
                       const std::function<void(const io::Hdf5File&)>& write) {
  const int rank = io::CommRank(comm);
  ++saves_started;
  std::string tmp = final_path + ".tmp." + std::to_string(::getpid());
  io::AgreeOnStatus(comm, rank == 0 ? PrepareDirectory(options) : Status::Ok());
  io::Broadcast(comm, &tmp, 0);
  // A failure anywhere leaves no temporary file behind.
  try {
    WriteAndPublish(comm, tmp, final_path, options, write);
  } catch (...) {
    if (rank == 0) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
    }
    throw;
  }
  fault::At(fault::Point::kCheckpointPrune, {.rank = rank, .index = saves_started});
  if (rank == 0 && options.keep_last > 0) {
    std::vector<std::string> all = ListCheckpoints(options);
    for (size_t i = 0; i + static_cast<size_t>(options.keep_last) < all.size(); ++i) {
      std::error_code ignored;
      fs::remove(all[i], ignored);
    }
  }
}

}  // namespace checkpoint_internal

std::string SaveCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                           Optimizer* optimizer, const TrainingState& state) {
  return SaveCheckpointCollective(options, io::SelfCommunicator(), model, optimizer, state,
                                  {{.offset = 0, .size = model.arena().size()}});
}

std::string SaveCheckpointCollective(const CheckpointOptions& options, io::Communicator comm,
                                     Sequential<float>& model, Optimizer* optimizer,
                                     const TrainingState& state,
                                     const std::vector<ArenaSlice>& owned) {
  checkpoint_internal::CheckOptions(options);
  const HostStateScope on_host(model, optimizer);  // a model on a device is saved from a copy
  // Phase 1: agree on the models and the slices, then on the directory and the temporary name.
  std::vector<SliceCrc> crcs;
  ThrowIfError(
      CheckSummaries(io::AllgatherInt64(comm, LocalSummary(model, optimizer, owned)), &crcs));
  const std::string final_path = checkpoint_internal::CheckpointPath(options, state.step);
  io::AgreeOnStatus(comm, CheckFiniteContents(model, optimizer, owned, final_path));
  // Phase 2.
  const RootMeta meta = checkpoint_internal::ShareRootMeta(comm, optimizer, state, model.spec(),
                                                           ShapeToString(model.input_shape()));
  std::vector<ArenaSlice> sorted = owned;
  std::sort(sorted.begin(), sorted.end(),
            [](const ArenaSlice& a, const ArenaSlice& b) { return a.offset < b.offset; });
  // Phases 3 and 4.
  checkpoint_internal::PublishCheckpoint(comm, options, final_path, [&](const io::Hdf5File& f) {
    WriteContents(f, model, optimizer, meta, sorted, crcs);
  });
  return final_path;
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

}  // namespace shardflow
