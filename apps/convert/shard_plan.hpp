// Which records go into which shard file, and which rank writes which shards.
//
// Records are numbered 0..N-1 globally. Shard s of S holds the contiguous ids ShardRows(N, s, S);
// rank r of P writes the contiguous shards ShardRows(S, r, P), hence the contiguous records
// RankRecords(r). Neither depends on P except through the shard-to-rank map, so the files are
// the same for any number of ranks. Ranks own no shards when S < P.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "io/hdf5/reader.hpp"
#include "io/pipeline/record_source.hpp"

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

// Reads the global record order from id `start` on: units (files, or a table's chunks) in order,
// unit u holding ids [first[u], first[u + 1]); `open(u)` opens unit u. Records before `start` in
// its unit are read and dropped. Next sets the record's where.file_index to its unit, and throws
// kInternal when the units end early (an input that changed during the conversion).
class RecordCursor {
 public:
  using Opener = std::function<std::unique_ptr<pipeline::RecordReader>(size_t unit)>;
  RecordCursor(std::vector<int64_t> first, int64_t start, Opener open);
  void Next(pipeline::Element* e);

 private:
  std::vector<int64_t> first_;  // units + 1 entries
  Opener open_;
  std::unique_ptr<pipeline::RecordReader> reader_;
  size_t unit_ = 0;
  int64_t id_ = 0;     // the id of the next record read
  int64_t start_ = 0;  // the first id returned
};

// "PREFIX-00003-of-00008.tfrecord" plus ".gz" / ".zlib" for compression "gzip" / "zlib".
std::string ShardFileName(const std::string& prefix, int64_t shard, int64_t shards,
                          const std::string& compression);

}  // namespace shardflow::convert
