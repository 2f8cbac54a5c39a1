#include "apps/convert/shard_writer.hpp"

#include <string>

#include "io/tfrecord_writer.hpp"

namespace shardflow::convert {

void WriteShardRecords(const ShardPlan& plan, const ConvertOptions& options,
                       ProgressReporter& progress,
                       const std::function<void(int64_t id, io::ExampleBuilder& builder)>& fill) {
  io::ExampleBuilder builder;
  std::string serialized;
  for (int64_t s = plan.MyShards().begin; s < plan.MyShards().end; ++s) {
    const std::string path = ShardFileName(options.out_path, s, plan.shards(), options.compression);
    io::TFRecordWriter writer(path);
    const io::RowRange ids = plan.ShardRecords(s);
    for (int64_t id = ids.begin; id < ids.end; ++id) {
      builder.Clear();
      fill(id, builder);
      serialized.clear();
      builder.SerializeTo(&serialized);
      writer.Write(serialized);
      progress.Advance(1, 1);
    }
    writer.Close();
  }
}

}  // namespace shardflow::convert
