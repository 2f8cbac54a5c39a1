#include "core/backend/backend.hpp"

#include <string>

namespace shardflow {

// BackendFor is the device registry's (core/backend/device_runtime.cpp).

void ThrowLabelOutOfRange(int64_t label, int64_t row, int64_t k) {
  throw Error(ErrorCode::kInvalidArgument,
              "label " + std::to_string(label) + " of batch row " + std::to_string(row) +
                  " is outside [0, " + std::to_string(k) + ")",
              {.record = row, .hint = "check the number of classes of the model's last layer"});
}

}  // namespace shardflow
