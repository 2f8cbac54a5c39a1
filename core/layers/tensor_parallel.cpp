#include "core/layers/tensor_parallel.hpp"

#include "core/error.hpp"

namespace shardflow {

TpSlice TpSliceOf(const TensorParallel* tp, int64_t full, const std::string& layer,
                  const std::string& what) {
  const int ways = TpWays(tp);
  if (ways < 1 || (tp != nullptr && (tp->way < 0 || tp->way >= ways))) {
    throw Error(ErrorCode::kInvalidArgument,
                "tensor-parallel way " + std::to_string(tp->way) + " of " + std::to_string(ways) +
                    " is not a way",
                {.key = kTensorParallelKey});
  }
  if (full % ways != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "layer " + layer + " cannot split its " + std::to_string(full) + " " + what + " " +
                    std::to_string(ways) + " ways (T = " + std::to_string(ways) + " must divide " +
                    std::to_string(full) + ")",
                {.key = kTensorParallelKey});
  }
  const int64_t size = full / ways;
  return {.begin = ways == 1 ? 0 : tp->way * size, .size = size, .full = full};
}

template <typename T>
void TpSum(const TensorParallel* tp, T* x, int64_t n) {
  if (TpWays(tp) == 1) return;
  const auto& sum = [&]() -> const std::function<void(T*, int64_t)>& {
    if constexpr (std::is_same_v<T, float>) {
      return tp->sum_float;
    } else {
      return tp->sum_double;
    }
  }();
  if (!sum) {
    throw Error(ErrorCode::kInternal,
                std::string("tensor-parallel model has no ") +
                    (std::is_same_v<T, float> ? "sum_float" : "sum_double") + " callback",
                {.key = kTensorParallelKey});
  }
  sum(x, n);
}

template void TpSum<float>(const TensorParallel*, float*, int64_t);
template void TpSum<double>(const TensorParallel*, double*, int64_t);

void CheckTensorSplit(TpRole role, bool input_split, const std::string& layer,
                      const std::string& token, const std::string& input, int ways) {
  std::string why;
  if (role == TpRole::kRow && !input_split) {
    why = "is row-parallel but its input is whole (a :row layer needs a :col layer's output)";
  } else if (role == TpRole::kColumn && input_split) {
    why = "is column-parallel but its input is a way's slice (put a :row layer before it)";
  } else if (role == TpRole::kReplicated && input_split) {
    why = "needs its whole input but gets a :col layer's slice (end the split with a :row layer)";
  }
  if (why.empty()) return;
  throw Error(ErrorCode::kInvalidArgument,
              "layer " + layer + " ('" + token + "') on input " + input + " " + why +
                  ", T = " + std::to_string(ways),
              {.key = kTensorParallelKey});
}

}  // namespace shardflow
