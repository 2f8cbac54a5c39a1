// Every rank's input-pipeline iterator state in one checkpoint blob.
//
// Each rank reads its own shard, so an exact resume needs every rank's iterator position; rank 0
// writes checkpoints, so the states are gathered to it and packed:
//   "SFRS" | u32 version=1 | u32 ranks | ranks x (u64 length | bytes)      (little-endian)
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace shardflow::train {

// Collective: gathers `mine` from every rank; rank 0 gets the packed blob, others "".
std::vector<uint8_t> GatherRankStates(const std::string& mine, MPI_Comm comm);

// This rank's state from a packed blob. Throws Error(kInvalidArgument) when the blob holds a
// different number of ranks (resume needs the same rank count) and Error(kDataLoss) when it is
// damaged. An empty blob gives "".
std::string RankStateFromBlob(const std::vector<uint8_t>& blob, int rank, int size);

}  // namespace shardflow::train
