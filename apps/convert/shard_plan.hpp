// Which records go into which shard file, and which rank writes which shards.
//
// Records are numbered 0..N-1 globally. Shard s of S holds the contiguous ids ShardRows(N, s, S);
// rank r of P writes the contiguous shards ShardRows(S, r, P), hence the contiguous records
// RankRecords(r). Neither depends on P except through the shard-to-rank map, so the files are
// the same for any number of ranks. Ranks own no shards when S < P.
#pragma once

#include <cstdint>
#include <string>

#include "io/hdf5_reader.hpp"

namespace shardflow::convert {

class ShardPlan {
 public:
  // REQUIRES: records >= 0, shards >= 1, 0 <= rank < ranks.
  ShardPlan(int64_t records, int64_t shards, int rank, int ranks);

  int64_t records() const { return records_; }
  int64_t shards() const { return shards_; }
  io::RowRange ShardRecords(int64_t shard) const;  // ids of shard `shard`
  io::RowRange MyShards() const { return my_shards_; }
  io::RowRange MyRecords() const { return my_records_; }

 private:
  int64_t records_;
  int64_t shards_;
  io::RowRange my_shards_;
  io::RowRange my_records_;
};

// "PREFIX-00003-of-00008.tfrecord" plus ".gz" / ".zlib" for compression "gzip" / "zlib".
std::string ShardFileName(const std::string& prefix, int64_t shard, int64_t shards,
                          const std::string& compression);

}  // namespace shardflow::convert
