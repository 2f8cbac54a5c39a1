// Pieces shared by the checkpoint writers (io/checkpoint/checkpoint.cpp: whole model and arena
// slices; io/checkpoint/partitioned.cpp: a model held in parts). Not part of io's interface.
// Thread-safety: as the writers (one thread per process); the functions taking a communicator
// or an MPI-IO file are collective over it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/checkpoint/checkpoint.hpp"
#include "io/checkpoint/format.hpp"
#include "io/hdf5/file.hpp"

namespace shardflow::checkpoint_internal {

// Rank 0's part of the file besides the model's tensors, shared with every rank before writing
// (HDF5's metadata calls must be made with equal values on every rank).
struct RootMeta {
  TrainingState state;  // iterator_state left empty: see iterator_state below
  std::string model_spec;
  std::string input_shape;
  std::string optimizer_name;  // empty: no optimizer
  int64_t iterations = 0;
  // The iterator states (issue 20.7 / 27.12): only their length travels; rank 0, which writes
  // them, points at the caller's bytes, which are never copied (null elsewhere).
  uint64_t iterator_bytes = 0;
  const std::vector<uint8_t>* iterator_state = nullptr;
};

// Collective: rank 0's state (but the iterator state's bytes, see RootMeta), optimizer name and
// iterations, model_spec and input_shape on every rank (the broadcast of a length-prefixed
// packing). REQUIRES: `state` outlives the result on rank 0.
RootMeta ShareRootMeta(io::Communicator comm, Optimizer* optimizer, const TrainingState& state,
                       const std::string& model_spec, const std::string& input_shape);

std::vector<hsize_t> Dims(const Shape& shape);

// Error(kDataLoss) naming the tensor and element when v[0, n) holds NaN or Inf, so a diverged
// run never replaces a good checkpoint with a useless one.
Status CheckFinite(const std::string& kind, const std::string& name, const float* v, int64_t n,
                   const std::string& path);

// Creates a checksummed dataset and writes `data` from rank `writer` alone (the others take part
// with an empty selection).
void WriteByOneRank(const io::Hdf5File& file, const std::string& name, hid_t type, const void* data,
                    const std::vector<hsize_t>& dims, int writer,
                    int64_t chunk_bytes = checkpoint_format::kMaxChunkBytes);

// The optimizer group's attributes, /state, /config and the root attributes.
void WriteRootObjects(const io::Hdf5File& file, const RootMeta& meta, int64_t num_params,
                      int64_t arena_size, uint32_t crc);

// Error(kInvalidArgument) when options.dir is empty.
void CheckOptions(const CheckpointOptions& options);
// <dir>/<prefix>-<step, 9 digits>.h5
std::string CheckpointPath(const CheckpointOptions& options, int64_t step);

// Collective: rank 0 creates the directory and picks the temporary name; every rank creates the
// file, runs `write`, closes and fsyncs it; rank 0 renames it to `final_path`, fsyncs the
// directory and prunes to keep_last. Every failure is an error on every rank, and leaves no
// temporary file.
void PublishCheckpoint(io::Communicator comm, const CheckpointOptions& options,
                       const std::string& final_path,
                       const std::function<void(const io::Hdf5File&)>& write);

}  // namespace shardflow::checkpoint_internal
