// Every rank's input-pipeline iterator state in one checkpoint blob.
//
// Each rank reads its own shard, so an exact resume needs every rank's iterator position; rank 0
// writes checkpoints, so the states are gathered to it and packed:
//   "SFRS" | u32 version=2 | u32 ranks | ranks x u64 length | the states, in rank order
// (little-endian; version 1, still read, put each length before its state). Each state is
// received straight into its place in the blob (comm::GatherInto: size_t lengths, any size,
// under the watchdog): rank 0 holds the blob and its own state, nothing more.
// Thread-safety: GatherRankStates as Communicator; RankStateFromBlob is thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace shardflow::train {

// Collective: gathers `mine` from every rank; rank 0 gets the packed blob, the others an empty
// vector.
std::vector<uint8_t> GatherRankStates(const std::string& mine, comm::Communicator& comm);

// This rank's state from a packed blob. Throws Error(kInvalidArgument) when the blob holds a
// different number of ranks (resume needs the same rank count) and Error(kDataLoss) when it is
// damaged. An empty blob gives "".
std::string RankStateFromBlob(const std::vector<uint8_t>& blob, int rank, int size);
// The number of ranks whose states a packed blob holds (0 for an empty blob); throws
// Error(kDataLoss) for a bad header.
int RankStatesCount(const std::vector<uint8_t>& blob);

}  // namespace shardflow::train
