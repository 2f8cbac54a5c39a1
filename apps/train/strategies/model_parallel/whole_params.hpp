// The whole model's parameters gathered from the parts ranks hold (pipeline stages, tensor-
// parallel slices), as one flat arena in the whole model's layout, on every rank. For tests and
// small models (TrainResult::params): rank 0 builds the whole model to place them, so the model
// must fit one rank.
// Thread-safety: as Communicator; collective over `comm`.
#pragma once

#include <vector>

#include "comm/communicator.hpp"
#include "core/model.hpp"

namespace shardflow::train {

// Collective over `comm`. Ranks with `contributes` send every parameter (or slice) of `part`;
// the parts of the contributing ranks must cover the whole model of (spec, input_shape,
// options without tensor parallelism). Throws Error(kInternal) when they do not.
std::vector<float> GatherWholeParams(comm::Communicator& comm, bool contributes,
                                     Sequential<float>& part, const std::string& spec,
                                     const Shape& input_shape, const ModelOptions& options);

}  // namespace shardflow::train
