// Collecting and writing the predictions of all ranks.
//
// Strategy: gather to rank 0, then sort. Every rank sends its rows (ids, and classes +
// probabilities or errors) to rank 0 with comm::GatherConcat; rank 0 sorts them by id and refuses
// duplicate ids. That costs rank 0 memory for all rows (8 + 8 + 4K bytes per record for K
// classes: 56 MB per million records at K = 10), which batch prediction outputs fit easily, and
// gives a globally id-sorted file however the records were sharded (an Exscan of per-rank
// counts would only give rank-ordered rows, since shards are not id ranges).
// Writing: HDF5 through io::Hdf5Writer, collectively (every rank creates the datasets; rank 0
// writes all rows, the others write zero rows); CSV by rank 0 alone.
//
// HDF5 layout: ids int64 [N]; classify: classes int64 [N], probabilities float32 [N, K];
// reconstruct: errors float32 [N]; a sequence model (a language model): losses float32 [N] (nats
// per token) and accuracies float32 [N] (next-token). CSV: header `id,class,p0,..,pK-1`
// (classify), `id,error` (reconstruct) or `id,loss,accuracy` (a sequence model), one line per
// record, floats with 9 significant digits.
// Thread-safety: none; collective over `comm`.
#pragma once

#include <string>

#include "apps/common/prediction/predictor.hpp"
#include "comm/communicator.hpp"

namespace shardflow::predict {

// Collective. Rank 0 gets every rank's rows sorted by id; the other ranks get an empty set
// with num_classes set. Throws Error(kDataLoss) on rank 0 naming the first duplicate id (the
// other ranks are then ended by the run-phase error policy).
apps::PredictionRows GatherSorted(comm::Communicator& comm, const apps::PredictionRows& mine,
                                  apps::Task task);

// What WritePredictions needs besides the rows; the same on every rank.
struct PredictionFileInfo {
  int64_t total = 0;  // the global row count
  apps::Task task = apps::Task::kClassify;
  bool sequence = false;   // a sequence model's rows: losses and accuracies
  int64_t labelled = 0;    // records with a label, over the ranks: > 0 adds a label column
  std::string checkpoint;  // the checkpoint file the predictions come from
  std::string input;       // the input files (patterns, as given)
};

// Collective. `all` is GatherSorted's result (rows on rank 0 only). CSV: id[,label],class,p0..
// (label empty for a record without one) or id,error; HDF5: datasets ids, classes,
// probabilities[, labels (-1: none)] or errors, and root attributes checkpoint, input, task
// and records. Creates parent directories. Throws Error(kIo) naming the file.
void WritePredictions(comm::Communicator& comm, const std::string& path,
                      const apps::PredictionRows& all, const PredictionFileInfo& info);

}  // namespace shardflow::predict
