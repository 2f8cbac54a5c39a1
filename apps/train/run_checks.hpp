// The checks shardflow-train makes before a run (the parse phase: every rank finds the same,
// one line says what is wrong, exit 2), and what rank 0 clears before one starts.
// Thread-safety: the main thread.
#pragma once

#include "apps/common/experiment_config.hpp"
#include "apps/train/trainer.hpp"

namespace shardflow::train {

// --resume without a checkpoint to resume from, or with one that does not fit the model (the
// same parameters by name and whole shape, whatever grid wrote it) or the optimizer, or that
// another run wrote (CheckSameRun). --resume=auto starts fresh when there is none.
void CheckResumable(const TrainerOptions& o);
// A fresh run (no --resume) into an OUTPUT that holds another run's checkpoints or metrics is
// refused unless --overwrite (which excludes --resume).
void CheckFreshOutput(const TrainerOptions& o, bool overwrite);
// --overwrite, on rank 0 before anything is written: the previous run's checkpoints,
// metrics.jsonl, summary.json and TensorBoard events go, logged.
void ClearPreviousRun(const TrainerOptions& o);
// checkpoint.dir must be a folder this rank can create files in (Error(kIo) naming the errno).
void CheckCheckpointDir(const TrainerOptions& o, int rank);
// Rank 0, before anything is written, for --resume=auto (a requeued job): when there is no
// checkpoint to resume from, the run starts fresh, and the logs of the run that died before its
// first checkpoint (metrics.jsonl, summary.json, TensorBoard's tb/) are moved into
// OUTPUT/unfinished-run-N/ (the first free N), logged, so the two runs' logs never mix.
void SetAsideUnfinishedRun(const TrainerOptions& o);
// Rank 0, before training: checkpoint files a killed writer left unfinished are removed, logged.
void RemoveUnfinishedCheckpoints(const TrainerOptions& o);
// The inputs: patterns that match nothing and folders among the data files are refused here,
// once; an assembled input must be what the model reads; labels are range-checked per example
// (o->train_input and eval_input get the check).
void CheckInputs(TrainerOptions* o);

}  // namespace shardflow::train
