// Writing converted images: this rank's TFRecord shard files, or its rows of one HDF5 file.
#pragma once

#include "comm/communicator.hpp"

#include "apps/convert/channel_stats.hpp"
#include "apps/convert/convert_options.hpp"
#include "apps/convert/image_input.hpp"
#include "apps/convert/shard_plan.hpp"
#include "core/progress.hpp"
#include "io/hdf5/writer.hpp"

namespace shardflow::convert {

// Writes shards plan.MyShards() from `records` (the records plan.MyRecords(); images uint8 or
// float32 [n, H, W, C]), one tf.train.Example each (schema in ConvertHelpEpilogue). Empty shards
// become empty files. Throws Error(kIo) naming the file.
void WriteImageShards(const ShardPlan& plan, const ImageRecords& records,
                      const ConvertOptions& options, ProgressReporter& progress);

// Creates options.out_path on every rank of `comm` and writes this rank's rows of images
// (stored_shape per row), labels and ids, plus norm_offset/norm_divisor when normalized.
// Collective.
void WriteImagesHdf5(const ShardPlan& plan, const ImageRecords& records, const Shape& stored_shape,
                     const Normalization& norm, const ConvertOptions& options,
                     comm::Communicator& comm);

// Writes the normalization datasets (norm_offset, norm_divisor [C] float64) into an open writer:
// rank 0 writes the rows. Collective. Does nothing when `norm` is not enabled.
void WriteNormalizationHdf5(io::Hdf5Writer& writer, const Normalization& norm, int rank);

}  // namespace shardflow::convert
