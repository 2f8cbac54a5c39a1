// Record datasets: reading a RecordSource through a shard plan.
//
//  MakeShardUnitsNode(plan)       one element per unit of the plan: features "file_index",
//                                 "begin", "end" (int64 scalars). Interleave consumes these.
//  MakeReadUnitNode(source, ...)  the records of one unit, with id = MakeElementId(file,
//                                 offset), where.file/file_index set, and the record policy's
//                                 filter applied. Errors get stage "read" and the file name.
//  MakeRecordDatasetNode(...)     units read one after another (the sequential reader);
//                                 dataset.hpp's Dataset::FromRecordSource adds interleave.
// The source must outlive every iterator (held by shared_ptr).
#pragma once

#include <memory>

#include "io/pipeline/iterator.hpp"
#include "io/pipeline/record_source.hpp"
#include "io/pipeline/shard_policy.hpp"

namespace shardflow::pipeline {

NodePtr MakeShardUnitsNode(std::shared_ptr<const RecordSource> source, const ShardPlan& plan);
NodePtr MakeReadUnitNode(std::shared_ptr<const RecordSource> source, const ShardUnit& unit,
                         int record_stride, int record_offset, int record_width = 1);
// The unit an element of MakeShardUnitsNode describes.
ShardUnit UnitFromElement(const Element& unit_element);

}  // namespace shardflow::pipeline
