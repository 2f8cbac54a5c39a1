// Writing this rank's TFRecord shard files: the loop every record kind shares.
//
// For each shard of plan.MyShards() the file PREFIX-SSSSS-of-NNNNN.tfrecord[.gz|.zlib] is
// written with one tf.train.Example per record id of the shard, in id order; `fill` adds the
// record's features to a cleared builder. Empty shards become empty files. Throws Error(kIo)
// naming the file.
// Thread-safety: none; one call per rank.
#pragma once

#include <cstdint>
#include <functional>

#include "apps/convert/convert_options.hpp"
#include "apps/convert/shard_plan.hpp"
#include "core/progress.hpp"
#include "io/example.hpp"

namespace shardflow::convert {

void WriteShardRecords(const ShardPlan& plan, const ConvertOptions& options,
                       ProgressReporter& progress,
                       const std::function<void(int64_t id, io::ExampleBuilder& builder)>& fill);

}  // namespace shardflow::convert
