// Element-wise and reshaping map functions: raw bytes to typed tensors, cast and scale,
// one-hot labels, and sliding windows over time series.
// Errors are Error(kInvalidArgument) naming the feature and the sizes involved.
#pragma once

#include <string>

#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {

// uint8 bytes -> `dtype` tensor of `shape` (little-endian, as stored). One dimension may be
// -1 (inferred). The byte count must match exactly.
MapFn DecodeRaw(std::string feature, DType dtype, Shape shape, std::string out = "");
// out = cast(x) * scale (+ offset), e.g. uint8 pixels -> float32 in [0, 1] with 1/255.
MapFn CastAndScale(std::string feature, DType dtype, double scale = 1.0, double offset = 0.0);
// Integer label scalar (or [n] labels) -> float32 [depth] (or [n, depth]).
MapFn OneHot(std::string feature, int64_t depth, std::string out = "");
// Series [T, ...] -> windows [N, size, ...] with N = (T - size) / shift + 1 (0 when T < size).
// Follow with unbatch() for one window per element.
MapFn SlidingWindows(std::string feature, int64_t size, int64_t shift, std::string out = "");

// Value conversion used by the ops: element i of t as double / stored into dtype.
double ReadAsDouble(const Tensor& t, int64_t i);
void WriteFromDouble(Tensor& t, int64_t i, double v);

}  // namespace shardflow::pipeline
