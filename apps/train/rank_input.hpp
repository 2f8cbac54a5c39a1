// RankInput: the training loop's input on one rank, and elastic resume onto another rank count.
//
// Epochs. A run's steps fall into epochs by an EpochMap: regular epochs of steps_per_epoch
// steps from reg_begin (epoch reg_epoch there), and before them, after an elastic resume, one
// remainder segment [rem_begin, rem_end): the rest of the epoch that was interrupted, read from
// an explicit list of records. Without a resume onto another rank count the map is {0, 0, spe}
// and every step's epoch is step / spe, as it always was.
//
// Elastic resume (docs/design.md decision 40). A checkpoint holds every rank's saved input: its
// rank count, per-rank batch, EpochMap, LR scale, and the pipeline's iterator state (with the
// remainder's record list while in one). Resumed on P' ranks from P: every new rank rebuilds
// each old rank's pipeline at the checkpoint (the same structure, restored from its state) and
// reads what it would still have trained in the interrupted epoch, by record id (the
// _row_id feature, DataOptions::row_ids), without training on it. Those records, old rank by
// old rank in the order they would have come, are dealt to the new ranks a batch at a time
// (new batch t of rank j holds rows [t*G + j*b, +b), G = P'*b; with uneven batches, after the
// batches of ranks 0..j-1); the last step splits what is left evenly (within each rank's batch),
// so every rank takes the same number of steps. When fewer records are left than
// ranks for that last step (1..P'-1), they are left out of the epoch, logged and counted. From
// the next epoch on the new ranks shard the data as a fresh P'-rank run would. Each record of
// the interrupted epoch is trained at most once; nothing else is left out beyond what a
// P-rank epoch leaves out anyway (its equal-step tail).
// Batch: train.batch_semantics = global keeps the global batch (the per-rank batch is the
// global one over the new ranks; when it does not divide, the first G mod P' ranks take one row
// more and each step weighs the ranks' gradients by rows); per_rank keeps the per-rank batch, so
// the global batch changes by P'/P, and the learning rate follows the global batch (the linear
// scaling rule; logged). With train.lr_scaling = linear the base rate already has the rank
// count in it, so the factor makes up the difference: the rate stays as it was when the global
// batch stays, and follows it otherwise. The factor is kept in later checkpoints.
// Not bitwise: the data order after the change differs from a P'-rank run's and from a P-rank
// run's; the model is the same as a P-rank run's up to the checkpoint.
// Thread-safety: one thread (the training loop's).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "io/pipeline/iterator.hpp"
#include "io/pipeline/step_count.hpp"

namespace shardflow::train {

struct EpochMap {
  int64_t rem_begin = 0, rem_end = 0, rem_epoch = 0;
  int64_t reg_begin = 0, reg_epoch = 0, steps_per_epoch = 1;

  bool InRemainder(int64_t step) const { return step >= rem_begin && step < rem_end; }
  int64_t EpochOf(int64_t step) const;
  // `step` is the last of its epoch.
  bool EpochEnd(int64_t step) const;
  // The step count at which `epochs` epochs are done.
  int64_t PlannedSteps(int64_t epochs) const;
};

// What a checkpoint keeps of one rank's input.
struct SavedInput {
  int world = -1;  // ranks that took batches (-1: a checkpoint from before elastic resume)
  int64_t per_rank_batch = 0;
  double lr_scale = 1.0;
  EpochMap map;
  std::vector<int64_t> remainder_ids;  // this rank's remainder records, while in it
  bool in_remainder = false;           // `pipeline` is the remainder's iterator state
  std::string pipeline;                // the iterator state
  // The training metrics' running sums (loss sum, correct, rows), so that a resumed run logs
  // what one never stopped logs: the epoch's so far, as logged (every rank alike), and this
  // rank's since the last metrics line (reduced over the ranks when the line is written).
  // Zero in checkpoints from before they were kept.
  std::array<double, 3> epoch_sums{};
  std::array<double, 3> interval_sums{};
};
std::string EncodeSavedInput(const SavedInput& saved);
// A state without the header (older checkpoints) is the whole iterator state, world -1.
// Throws Error(kDataLoss) for a damaged one.
SavedInput DecodeSavedInput(const std::string& bytes);

// Datasets the loop reads: the training pipeline as rank `rank` of `world` with a per-rank
// batch (one pass; the ranks' shares of the records by `shard_weights` when not empty,
// DataOptions::shard_weights), and one reading exactly `ids` in order with a per-rank batch.
struct InputFactories {
  std::function<pipeline::Dataset(int rank, int world, int64_t per_rank_batch,
                                  const std::vector<int64_t>& shard_weights)>
      regular;
  std::function<pipeline::Dataset(std::shared_ptr<const std::vector<int64_t>> ids,
                                  int64_t per_rank_batch)>
      records;
  // Dynamic sharding (dynamic_shard.hpp): every record's id, files and records in order; and a
  // one-pass pipeline over the records `next` hands out (until nullopt), batched.
  std::function<std::vector<int64_t>()> all_ids;
  int64_t shuffle_seed = -1;  // the order of the records changes every epoch; < 0: file order
  std::function<pipeline::Dataset(std::function<std::optional<int64_t>()> next,
                                  int64_t per_rank_batch)>
      provided;
};

class RankInput {
 public:
  // `regular` is this rank's one-pass pipeline; `ids` this rank's remainder records (read only
  // when step `from` is in the map's remainder).
  RankInput(const InputFactories& factories, pipeline::Dataset regular, const EpochMap& map,
            int64_t from, std::vector<int64_t> ids, int64_t per_rank_batch,
            std::shared_ptr<pipeline::StepLimitReport> report);
  // The batch of `step` (steps come in order); false when the input ended early.
  bool Next(int64_t step, pipeline::Element* batch);
  // The batch Next(step, ...) will return, when the pipeline's read-ahead already holds it
  // (pipeline::Iterator::Peek): never blocks, consumes nothing.
  bool Peek(int64_t step, pipeline::Element* batch);
  // Positions the input at `step` from a saved pipeline state (of the remainder when
  // in_remainder).
  void Restore(int64_t step, bool in_remainder, const std::string& pipeline_state);
  // The state after `steps_done` steps.
  SavedInput Save(int64_t steps_done, int world, double lr_scale);
  const EpochMap& map() const { return map_; }
  // The regular pipeline's stage counters (thread-safe; the stall inspector reads them).
  const pipeline::PipelineStats& stats() const { return regular_->stats(); }

 private:
  EpochMap map_;
  int64_t per_rank_batch_;
  std::vector<int64_t> ids_;
  std::unique_ptr<pipeline::PipelineIterator> remainder_;
  std::unique_ptr<pipeline::PipelineIterator> regular_;
};

// Where an elastic resume continues, on new rank `rank` of `world` with `per_rank_batch`.
struct ElasticStart {
  EpochMap map;  // steps_per_epoch: the new regular plan's
  std::vector<int64_t> ids;
  double lr_scale = 1.0;
  int64_t left_out = 0;  // records of the interrupted epoch no rank trains on
  std::string summary;   // one line for the log
  // The metrics' running sums (SavedInput): the epoch's (old rank 0's), and every old rank's
  // partial interval added up (new rank 0 takes them; the sums are reduced over the ranks).
  std::array<double, 3> epoch_sums{};
  std::array<double, 3> interval_sums{};
};
// `old_states`: every old rank's saved input (rank order), at step `step`; `batches` every new
// rank's batch (world = its size; uneven when a global batch does not divide: new rank j's rows
// of a full step follow the batches of ranks 0..j-1); `steps_per_epoch` the new regular plan's.
// With `comm` (the new ranks; collective), new rank j replays old ranks j, j + world, ... and
// the lists are shared; without, this rank replays them all. The result is the same either way.
// `unit` names what `world` counts in the log line ("ranks"; "data replicas" for model
// parallelism). Throws Error(kInvalidArgument) when the checkpoint cannot be resumed on this
// rank count (a checkpoint from before elastic resume).
ElasticStart PlanElasticResume(const InputFactories& factories,
                               const std::vector<std::string>& old_states, int64_t step, int rank,
                               const std::vector<int64_t>& batches, bool global_batch,
                               bool lr_scaled_by_ranks, int64_t steps_per_epoch,
                               comm::Communicator* comm = nullptr, const char* unit = "ranks");

// "6", or "5..6" for uneven per-rank batches (the log's and the elastic resume's word for them).
std::string BatchText(const std::vector<int64_t>& batches);

// Hands "EPOCH STEP id,id,..." for the batch this rank trains to the test-only observation point
// fault::Point::kBatchTaken (core/fault_injection.hpp: SHARDFLOW_TEST_ROW_IDS, with which the
// elastic tests count records). Nothing when the batch carries no record ids.
void LogRowIds(int rank, int64_t epoch, int64_t step, const pipeline::Element& batch);

}  // namespace shardflow::train
