// StageError: putting the stage name and the element's provenance on an error, once, where it
// originates.
//
// Call RethrowInStage() inside a catch block. A shardflow::Error gets "stage 'NAME': " in front
// of its message (unless a deeper stage already named itself) and the element's file/record
// where its context lacks them; any other exception (a user map function throwing
// std::runtime_error) becomes Error(kInvalidArgument) with the same context.
#pragma once

#include <string>

#include "io/pipeline/element.hpp"

namespace shardflow::pipeline {

[[noreturn]] void RethrowInStage(const std::string& stage, const Provenance* where);

}  // namespace shardflow::pipeline
