// Tensor parallelism inside one model (Megatron style): a model split T ways, one way per rank
// of a tensor group, each way holding a slice of the split layers' parameters.
//
//   column-parallel (dense:U:col, conv:...:col): the way holds output units / channels
//     [way * U/T, (way + 1) * U/T); its output is that slice of the activation (the last
//     dimension). Backward: dx = SUM over ways of dy_slice W_slice^T (one all-reduce).
//   row-parallel (dense:U:row, conv:...:row): its input is a way's slice of the last dimension
//     (a column layer's output, possibly through slice-wise layers); the way holds the kernel
//     rows / input channels of that slice. Forward: y = SUM over ways of x_slice W_slice (one
//     all-reduce) + bias (the whole bias, replicated). Backward needs no communication.
//   slice-wise layers (activations, dropout, pooling, global average pooling) act on each
//     element or channel alone, so they run on a slice unchanged (dropout keys its masks by the
//     whole tensor's element index).
//   every other layer needs the whole activation and is replicated on every way.
// With ways == 1 a marked layer is exactly the unmarked one, bit for bit.
//
// Thread-safety: a TensorParallel is read-only once a model is built; its sum callbacks are
// called from the thread running the model's Forward/Backward, collectively: every way of the
// group calls them in the same order with the same counts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace shardflow {

// The error key of every tensor-parallel build refusal.
inline constexpr const char* kTensorParallelKey = "dist.tensor_parallel";

// Which way of how many a model is, and how the tensor group sums. sum_float / sum_double must
// replace x[0, n) in place by the element-wise SUM of every way's x[0, n) (an all-reduce over
// the tensor group, same result on every way); only the one matching the model's scalar type
// is needed, and neither when ways == 1.
struct TensorParallel {
  int way = 0;
  int ways = 1;
  std::function<void(float*, int64_t)> sum_float;
  std::function<void(double*, int64_t)> sum_double;
};

// How a layer treats tensor-split activations.
enum class TpRole {
  kReplicated,  // needs the whole input; output whole
  kColumn,      // whole input; output a way's slice of the last dimension
  kRow,         // input a way's slice of the last dimension; output whole
  kSliceWise,   // output split exactly as its input
};

// Which tensor-parallel marker a dense or conv token carries.
enum class TpSplit { kNone, kColumn, kRow };

// A way's part [begin, begin + size) of a dimension of length full.
struct TpSlice {
  int64_t begin = 0;
  int64_t size = 0;
  int64_t full = 0;
};

// The ways of `tp` (1 when tp is null).
inline int TpWays(const TensorParallel* tp) { return tp == nullptr ? 1 : tp->ways; }

// The way's slice of a dimension of length `full` split tp->ways ways. Throws
// Error(kInvalidArgument, key dist.tensor_parallel) naming `layer`, `what`, full and T when full
// is not divisible by T.
TpSlice TpSliceOf(const TensorParallel* tp, int64_t full, const std::string& layer,
                  const std::string& what);

// x[0, n) <- SUM over ways (tp->sum_float / sum_double). No-op when ways == 1. Throws
// Error(kInternal) when the callback for T is missing.
template <typename T>
void TpSum(const TensorParallel* tp, T* x, int64_t n);

// Checks the tensor-parallel validity of a layer with `role` built on an input that is
// (`input_split`) or is not a way's slice, for any T: a column layer needs a whole input, a row
// layer a split one, a replicated layer a whole one. Throws Error(kInvalidArgument, key
// dist.tensor_parallel) naming the layer, its (per-way) input shape `input` and T.
void CheckTensorSplit(TpRole role, bool input_split, const std::string& layer,
                      const std::string& token, const std::string& input, int ways);

}  // namespace shardflow
