// Training checkpoints in HDF5, readable by h5py, written and read through io's HDF5 layer
// (io/hdf5/file, io/hdf5/objects). Namespace shardflow (the trainer and predict use it as such).
//
// File layout (format "shardflow-checkpoint", version 1):
//   /params/<layer>/<name>     one float32 dataset per parameter, shaped like it
//                              (e.g. /params/03_dense/kernel, /params/02_residual/conv1/kernel);
//                              attribute crc32: the CRC-32 of its bytes (absent in files
//                              written before partitioned checkpoints; checked when present)
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
// Three writers produce the same file content: SaveCheckpoint (one process writes the whole
// arena), SaveCheckpointCollective (every rank of a communicator writes the slices of the
// arena and of each optimizer slot it owns, through MPI-IO, for parameter-server runs) and
// SavePartitionedCheckpoint (every rank of one data-parallel replica writes the part of the
// model it holds: a pipeline stage's layers, tensor-parallel slices of parameters, or both).
// Whatever the grid, the file is the unsplit model's. Loading does not know which wrote a file,
// and loads onto any part: a stage reads its layers' parameters, buffers and optimizer ranges;
// a tensor-parallel slice reads its hyperslab of the parameter's dataset and the matching
// strided hyperslab of each flat optimizer slot (the whole-arena order, layer descending then
// declaration order, places every parameter in the slots).
//
// params_crc32 is the CRC-32 of the whole arena's bytes in whole-arena order, and each
// parameter's crc32 that of its bytes; the collective and partitioned writers assemble both from
// CRCs of the pieces each rank holds (zlib's crc32_combine), computed from the memory they
// write. A load of the whole model checks params_crc32; every load checks the crc32 of each
// parameter it reads whole (a pipeline stage: all of them); a tensor-parallel slice cannot be
// checked against the whole parameter's CRC and relies, like everything else read, on the
// Fletcher-32 checksum of every chunk, which HDF5 verifies on each read. (The one difference is
// below the content: parallel HDF5 allocates a collective file's chunks when the dataset is
// created, the serial library when it is first written.)
//
// Writes are atomic: the file is written under a temporary name, fsync'ed, renamed to
// <dir>/<prefix>-<step, 9 digits>.h5 and the directory fsync'ed, so a crash leaves either the
// old set of checkpoints or the new one. Only the last keep_last checkpoints are kept. Loading
// is all-or-nothing: everything is read and checked before the model or optimizer is touched,
// so a refused file leaves them as they were and the previous checkpoint stays usable.
// Thread-safety: functions are independent; HDF5 is used from one thread at a time (see
// io/hdf5/file.hpp). SaveCheckpoint on one rank only (rank 0 writes) or
// SaveCheckpointCollective on all ranks of a communicator: never both into one directory.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/model.hpp"
#include "core/optim/optimizer.hpp"
#include "io/checkpoint/slices.hpp"
#include "io/hdf5/file.hpp"

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

// The part of a model that one rank holds, as the partitioned writer and the loader see it.
// MakeCheckpointPart builds it from a Sequential (whole or a LayerRange stage, with
// tensor-parallel ParamSpec fields where its layers split); tests fabricate parts directly.
struct CheckpointPart {
  int first_layer = 0;  // whole-model index of the part's first layer
  int end_layer = 0;    // one past its last layer
  int spec_layers = 0;  // layers in the whole model
  std::string spec;     // the part's layers' unsplit spec, joined by ", "
  Shape input_shape;    // the part's input per sample (the model's when first_layer 0)
  // Its parameters in declaration order, laid out in arena order (layer descending, then
  // declaration order, as Arena::Allocate does); offset/size index `params` and each slot.
  std::vector<ParamSpec> specs;
  int64_t arena_size = 0;            // elements of `params` and of each slot
  float* params = nullptr;           // read by saves, written by loads
  std::vector<NamedTensor> buffers;  // named "<layer_name>/<buffer>"; never split
  Optimizer* optimizer = nullptr;    // optional; its Slots() are arena_size each
};

CheckpointPart MakeCheckpointPart(Sequential<float>& model, Optimizer* optimizer);

// Collective over `comm`, the ranks of one data-parallel replica (every stage and tensor way),
// each passing the part it holds: writes the unsplit model's checkpoint, the same datasets,
// shapes and values as SaveCheckpoint of the whole model. A parameter or buffer held whole by
// several ranks (replicated over tensor ways) is written by the lowest of them; every slice by
// its holder. Rank 0 supplies state, config, optimizer iterations; the model spec is the parts'
// specs joined in layer order, the input shape that of the part holding layer 0. Atomic and
// pruned like SaveCheckpoint. Returns the path on every rank. Throws on every rank:
//   Error(kInvalidArgument) when the parts' layer ranges leave a gap or overlap, the slices of a
//     parameter do not tile its full shape (naming the parameter, elements and ranks), the
//     ranks' optimizer kinds differ, or a part is inconsistent (shapes, slot sizes);
//   Error(kDataLoss) naming the tensor when what some rank would write holds NaN or Inf;
//   Error(kIo) as SaveCheckpointCollective.
std::string SavePartitionedCheckpoint(const CheckpointOptions& options, io::Communicator comm,
                                      const CheckpointPart& part, const TrainingState& state);
std::string SavePartitionedCheckpoint(const CheckpointOptions& options, io::Communicator comm,
                                      Sequential<float>& part, Optimizer* optimizer,
                                      const TrainingState& state);

// Loads onto a part (any part of any grid, or the whole model) from a checkpoint written by any
// writer; as LoadCheckpoint below (the same errors; a shape mismatch compares the parameter's
// full shape with the dataset's; LoadLatestCheckpoint skips damaged files as the overload
// below). Local to the calling rank.
TrainingState LoadCheckpoint(const std::string& path, const CheckpointPart& part);
void LoadWeights(const std::string& path, const CheckpointPart& part);
std::string LoadLatestCheckpoint(const CheckpointOptions& options, const CheckpointPart& part,
                                 TrainingState* state);

// What a checkpoint holds, read from its metadata alone (no tensor data): usable before any
// model is built. Throws like LoadCheckpoint for a missing, corrupt or foreign file.
struct CheckpointInfo {
  int64_t step = 0;
  int64_t epoch = 0;
  std::string model_spec;
  std::string input_shape;
  std::string optimizer;                              // empty: weights only
  std::vector<std::pair<std::string, Shape>> params;  // "03_dense/kernel", full shape; by name
  std::string config_text;                            // the resolved config that wrote it
};
CheckpointInfo ReadCheckpointInfo(const std::string& path);

// Loads weights, buffers, optimizer state (when optimizer is non-null; the file must then hold
// that optimizer's slots) and returns the training state. `model` may be a stage (LayerRange)
// or hold tensor-parallel slices. Throws
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
