// shardflow-train's options from an experiment config (apps/common/experiment_config.hpp).
// Thread-safety: none; called once from the main thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "apps/common/experiment_config.hpp"
#include "apps/train/strategy_unit.hpp"
#include "apps/train/trainer.hpp"

namespace shardflow::train {

// The trainer's options for `job`, from the parsed `config` and `schema`: the strategy's unit is
// chosen and resolved (strategy_unit.hpp; `strategies` is what DescribeStrategies returned for
// `schema`), its rank plan made, and the input specs resolved (TrainerOptions::train_input,
// eval_input: batch per rank, one pass); `config` is not changed.
// Throws Error(kInvalidArgument) naming the key for combinations that cannot work (e.g. a global
// batch smaller than the replica count, or one that does not divide over model-parallel replicas
// or dynamically sharded workers). A global batch that does not divide otherwise is split
// unevenly (replica_batches; SetReplicaBatch picks this rank's).
TrainerOptions MakeTrainerOptions(const apps::ExperimentConfig& config, const ConfigSchema& schema,
                                  const StrategySchema& strategies, const JobShape& job,
                                  const std::string& config_text);

// The batch of each of `replicas` replicas for a global batch `global` (>= replicas): the
// quotient, and one more for the first `global % replicas`.
std::vector<int64_t> SplitGlobalBatch(int64_t global, int replicas);

// This rank's part of an uneven global batch (o->replica_batches not empty), as replica `index`
// of the data: its batch in o->per_rank_batch and o->train_input, and the ranks' shares of the
// records in proportion to their batches (data.shard_weights), so that their shards last the
// same number of steps. Nothing for equal batches.
void SetReplicaBatch(int index, TrainerOptions* o);

// The values derived from the config that the resolved table cannot show: the batch per rank
// and in all, and the learning rate the schedule starts from (after train.lr_scaling). One line.
std::string DerivedValues(const apps::ExperimentConfig& config, const TrainerOptions& o);

// Keys of [data] and [eval] that shardflow-train sets itself (the batch per rank from
// train.batch_size, one pass per epoch, evaluation in order, whole, with [data]'s augmentations
// less their randomness): they are
// left out of its resolved table (DisownTrainerSetKeys, before parsing), and giving one is
// refused (RefuseTrainerSetKeys, after parsing: Error(kInvalidArgument) naming the key and the
// one that acts instead).
void DisownTrainerSetKeys(ConfigSchema& schema);
void RefuseTrainerSetKeys(const ConfigSchema& schema);

// A run's identity: the resolved keys that fix what the parameters mean and the element order
// (the model, its input and the data's files, features, order and batching), not the length of
// training or the optimisation schedule (train.epochs, train.max_steps, train.lr, ... may change
// on resume), nor threads or read-ahead. The checkpoint stores it as a hash on a comment line of
// its config text ("# run identity: HEX").
const std::vector<std::string>& RunIdentityKeys();
// `config_text` with its identity line appended.
std::string WithRunIdentity(const std::string& config_text);
// Whether the run that wrote `stored_text` (a checkpoint's config, at `path`) is the run of
// `current_text`: false when the stored text has no identity line (a checkpoint written before
// hashes; not checked). Throws Error(kInvalidArgument) naming the checkpoint, both hashes and
// each differing key with both values when the identities differ.
bool CheckSameRun(const std::string& stored_text, const std::string& current_text,
                  const std::string& path);

}  // namespace shardflow::train
