// shardflow-convert's run phase: read this rank's part of the input, compute global statistics,
// normalize, and write this rank's shards (see ConvertHelpEpilogue for the contract).
#pragma once

#include "apps/convert/convert_options.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::convert {

// Collective over the world (every rank of the job). Returns the exit code (0). Throws Error naming
// the input file and position on bad input, the output file on write failures.
int Run(MpiEnvironment& env, const ConvertOptions& options);

}  // namespace shardflow::convert
