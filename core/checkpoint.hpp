// Training checkpoints in HDF5, readable by h5py.
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
//   root attributes            format, version, step, epoch, seed, model_spec,
//                              num_params, arena_size, params_crc32 (CRC-32 of the arena bytes)
// Every non-empty dataset is chunked with the Fletcher-32 filter and the file uses the HDF5
// 1.8+ format (checksummed metadata), so flipped bytes are detected on read; the parameter
// CRC is checked after loading as a last line of defence.
//
// Writes are atomic: the file is written under a temporary name, fsync'ed, renamed to
// <dir>/<prefix>-<step, 9 digits>.h5 and the directory fsync'ed, so a crash leaves either the
// old set of checkpoints or the new one. Only the last keep_last checkpoints are kept. Loading
// is all-or-nothing: everything is read and checked before the model or optimizer is touched,
// so a refused file leaves them as they were and the previous checkpoint stays usable.
// Thread-safety: functions are independent; do not write the same directory from two ranks
// (rank 0 writes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.hpp"
#include "core/optim/optimizer.hpp"

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
// Throws Error(kIo) naming the file when writing fails (the previous files are untouched).
std::string SaveCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                           Optimizer* optimizer, const TrainingState& state);

// Loads weights, buffers, optimizer state (when optimizer is non-null; the file must then hold
// that optimizer's slots) and returns the training state. Throws
//   Error(kInvalidArgument) when a parameter is missing or its shape differs (names the
//     parameter and both shapes), or the optimizer differs;
//   Error(kDataLoss) when the file is truncated or corrupt;
//   Error(kNotFound) when the file does not exist.
TrainingState LoadCheckpoint(const std::string& path, Sequential<float>& model,
                             Optimizer* optimizer);

// Warm start: weights and buffers only; the optimizer and training state are ignored.
void LoadWeights(const std::string& path, Sequential<float>& model);

// Checkpoint files of `options` in `dir`, oldest first (by step).
std::vector<std::string> ListCheckpoints(const CheckpointOptions& options);

// Loads the newest checkpoint that is intact, newest first; a refused one is logged as a
// warning and skipped. Returns its path, or "" when there is none. Shape mismatches are not
// skipped (they are configuration errors): they throw.
std::string LoadLatestCheckpoint(const CheckpointOptions& options, Sequential<float>& model,
                                 Optimizer* optimizer, TrainingState* state);

}  // namespace shardflow
