// shardflow-convert --input.format=table: CSV tables (table_input.hpp) into TFRecord shards of
// tf.train.Example, one feature per column, with the statistics beside them.
//
// Per record: int64 columns as int64, float32/float64 columns as float (Examples hold float32),
// string columns as int64 indices into their vocabulary (sorted byte order; every value is in
// it, the statistics being over the same rows); plus "id" int64, the global record index, unless
// the table has an int64 column named id (written as it is).
// Beside the shards (PREFIX = output.path):
//   PREFIX.stats.json         io/table_stats.hpp: per column count, mean, std, min, max, and the
//                             vocabularies of categorical columns (data.assemble_stats reads it)
//   PREFIX.vocab.NAME.txt     a categorical column's vocabulary, one value per line
//   PREFIX.meta.json          records, shards, files, the source, and `features`: the [data]
//                             features line shardflow-train reads the shards with (also printed)
// Every file is the same for any rank count (statistics: table_input.hpp; records: shard_plan).
// Thread-safety: collective over the ranks; one thread per rank.
#pragma once

#include "apps/convert/convert_options.hpp"
#include "comm/communicator.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::convert {

// Collective over `comm`.
int RunTable(MpiEnvironment& env, const ConvertOptions& options, comm::Communicator& comm);

// The [data] features line for the converted shards of a table with these columns.
std::string TableFeaturesLine(const ConvertOptions& options);

}  // namespace shardflow::convert
