// Training checkpoints in HDF5, readable by h5py, written and read through io's HDF5 layer
// (io/hdf5_file, io/hdf5_objects). Namespace shardflow (the trainer and predict use it as such).
//
// File layout (format "shardflow-checkpoint", version 1):
//   /params/<layer>/<name>     one float32 dataset per parameter, shaped like it
//                              (e.g. /params/03_dense/kernel, /params/02_residual/conv1/kernel)
//   /buffers/<layer>/<name>    non-trainable tensors (batch-norm running statistics)
//   /optimizer/<slot>          flat float32 optimizer state the size of the arena
//                              (attributes: name, iterations); absent for weights-only files
//   /state/iterator            uint8 blob: the input pipeline's iterator state (opaque here)
//   /state/rng                 uint64 words of random-number state (opaque here)
//   /config                    the resolved config text (a string dataset)
//   root attributes            format, version, step, epoch, seed, model_spec, input_shape,
//                              num_params, arena_size, params_crc32 (CRC-32 of the arena bytes)
// Every non-empty dataset is chunked with the Fletcher-32 filter and the file uses the HDF5
// 1.8+ format (checksummed metadata), so flipped bytes are detected on read; the parameter
// CRC is checked after loading as a last line of defence.
//
// Two writers produce the same file content: SaveCheckpoint (one process writes the whole
// arena) and SaveCheckpointCollective (every rank of a communicator writes the slices of the
// arena and of each optimizer slot it owns, through MPI-IO, for model-parallel and
// parameter-server runs). Loading does not know which wrote a file. (The one difference is
// below the content: parallel HDF5 allocates a collective file's chunks when the dataset is
// created, the serial library when it is first written.)
//
// Writes are atomic: the file is written under a temporary name, fsync'ed, renamed to
// <dir>/<prefix>-<step, 9 digits>.h5 and the directory fsync'ed, so a crash leaves either the
// old set of checkpoints or the new one. Only the last keep_last checkpoints are kept. Loading
// is all-or-nothing: everything is read and checked before the model or optimizer is touched,
// so a refused file leaves them as they were and the previous checkpoint stays usable.
// Thread-safety: functions are independent; HDF5 is used from one thread at a time (see
// io/hdf5_file.hpp). SaveCheckpoint on one rank only (rank 0 writes) or
// SaveCheckpointCollective on all ranks of a communicator: never both into one directory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.hpp"
#include "core/optim/optimizer.hpp"
#include "io/checkpoint_slices.hpp"
#include "io/hdf5_file.hpp"

namespace shardflow {

struct CheckpointOptions {
  std::string dir;              // required; created if missing
  std::string prefix = "ckpt";  // file names <prefix>-<step>.h5
  int keep_last = 3;            // older checkpoints are deleted; <= 0 keeps all
};

// Everything besides the weights that a bit-identical resume needs.
struct TrainingState {
  int64_t step = 0;   // optimizer steps completed
  int64_t epoch = 0;  // epoch in progress
  uint64_t seed = 0;  // the run's seed (dropout masks and shuffles derive from seed and step)
  std::vector<uint64_t> rng;            // extra RNG words, opaque here
  std::vector<uint8_t> iterator_state;  // the pipeline's iterator state, opaque here
  std::string config_text;              // the resolved config
};

// Writes a checkpoint of model (+ optimizer when non-null) and state; returns its path.
// Throws Error(kIo) naming the file when writing fails (the previous files are untouched), and
// Error(kDataLoss) naming the tensor and element, before anything is written, when a parameter,
// buffer or optimizer slot holds NaN or Inf (a diverged model never replaces a good checkpoint).
std::string SaveCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                           Optimizer* optimizer, const TrainingState& state);

// Collective over `comm`: writes one checkpoint, in the layout above, from the slices of the
// arena that each rank owns (`owned`, arena elements; several, one or none per rank). A rank
// reads only its owned ranges of model.arena().params() and of each optimizer slot; the
// union over ranks must cover the arena exactly once. Rank 0 alone supplies everything else:
// buffers, optimizer name and iterations, `state`, the model spec (the other ranks' values
// are ignored). Every rank must pass the same model structure (arena size, parameters,
// buffers) and the same optimizer kind or none; `options` must be equal on every rank.
// Atomic like SaveCheckpoint: rank 0 picks the temporary name and shares it, every rank
// writes and fsyncs, rank 0 renames after all ranks have closed the file, then prunes to
// keep_last. Returns the checkpoint's path on every rank.
// Throws on every rank (no rank is left waiting in a collective):
//   Error(kInvalidArgument) when the slices leave a gap or overlap (naming the ranks and
//     offsets), or the ranks' models or optimizers differ;
//   Error(kDataLoss) naming the tensor when what some rank would write holds NaN or Inf
//     (nothing is written);
//   Error(kIo) naming the file when creating, writing, fsync or rename fails (the previous
//     checkpoints are untouched). An HDF5 failure inside a collective write on some ranks only
//     cannot be recovered by the others (HDF5 has no cancel); it ends in the trainer's abort.
std::string SaveCheckpointCollective(const CheckpointOptions& options, io::Communicator comm,
                                     Sequential<float>& model, Optimizer* optimizer,
                                     const TrainingState& state,
                                     const std::vector<ArenaSlice>& owned);

// Loads weights, buffers, optimizer state (when optimizer is non-null; the file must then hold
// that optimizer's slots) and returns the training state. Throws
//   Error(kInvalidArgument) when a parameter is missing or its shape differs (names the
//     parameter and both shapes), or the optimizer differs;
//   Error(kDataLoss) when the file is truncated or corrupt, or when a parameter, buffer or
//     optimizer slot holds NaN or Inf (naming the tensor and element; the model is untouched);
//   Error(kNotFound) when the file does not exist.
TrainingState LoadCheckpoint(const std::string& path, Sequential<float>& model,
                             Optimizer* optimizer);

// Warm start: weights and buffers only; the optimizer and training state are ignored.
void LoadWeights(const std::string& path, Sequential<float>& model);

// Checkpoint files of `options` in `dir`, oldest first (by step).
std::vector<std::string> ListCheckpoints(const CheckpointOptions& options);

// Loads the newest checkpoint that is intact, newest first; a refused one is logged as a
// warning and skipped. Returns its path, or "" when there is none. Shape mismatches are not
// skipped (they are configuration errors): they throw; nor is a file holding NaN or Inf (it is
// whole, not damaged, and falling back past it would hide a diverged run): it throws.
std::string LoadLatestCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                                 Optimizer* optimizer, TrainingState* state);

}  // namespace shardflow
