// Constants of the checkpoint file format (layout documented in io/checkpoint/checkpoint.hpp),
// shared by the writers (io/checkpoint/checkpoint.cpp) and the reader (io/checkpoint/load.cpp).
// Thread-safety: constants only.
#pragma once

#include <cstdint>

namespace shardflow::checkpoint_format {

// Root attribute "format".
inline constexpr const char* kFormat = "shardflow-checkpoint";
// Root attribute "version"; readers refuse any other.
inline constexpr int64_t kVersion = 1;
// Upper bound of one chunk: a chunk is a whole dataset unless that is larger, then its first
// dimension is cut so a chunk stays below this (bounds HDF5's filter buffers).
inline constexpr int64_t kMaxChunkBytes = int64_t{32} << 20;

// Attribute of each /params dataset: the CRC-32 (zlib) of the parameter's bytes in row-major
// order. Written since partitioned checkpoints (issue 13); absent in earlier version-1 files,
// so readers check it only when present.
inline constexpr const char* kParamCrc = "crc32";

// Group and dataset names.
inline constexpr const char* kParams = "/params/";
inline constexpr const char* kBuffers = "/buffers/";
inline constexpr const char* kOptimizer = "/optimizer";
inline constexpr const char* kRng = "/state/rng";
inline constexpr const char* kIterator = "/state/iterator";
inline constexpr const char* kConfig = "/config";

}  // namespace shardflow::checkpoint_format
