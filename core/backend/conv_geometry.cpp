#include "core/backend/conv_geometry.hpp"

#include <algorithm>
#include <string>

#include "core/error.hpp"

namespace shardflow {

ConvGeometry MakeConvGeometry(int64_t h, int64_t w, int64_t c, int64_t kh, int64_t kw,
                              int64_t stride, bool same) {
  if (kh <= 0 || kw <= 0 || stride <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "kernel size and stride must be positive, got " +
                                                 std::to_string(kh) + "x" + std::to_string(kw) +
                                                 " stride " + std::to_string(stride));
  }
  ConvGeometry g{.h = h, .w = w, .c = c, .kh = kh, .kw = kw, .stride = stride};
  if (same) {
    g.oh = (h + stride - 1) / stride;
    g.ow = (w + stride - 1) / stride;
    g.pad_top = std::max<int64_t>((g.oh - 1) * stride + kh - h, 0) / 2;
    g.pad_left = std::max<int64_t>((g.ow - 1) * stride + kw - w, 0) / 2;
  } else {
    if (kh > h || kw > w) {
      throw Error(ErrorCode::kInvalidArgument,
                  "a " + std::to_string(kh) + "x" + std::to_string(kw) + " window does not fit a " +
                      std::to_string(h) + "x" + std::to_string(w) + " input with valid padding",
                  {.hint = "use same padding or a smaller kernel"});
    }
    g.oh = (h - kh) / stride + 1;
    g.ow = (w - kw) / stride + 1;
  }
  return g;
}

}  // namespace shardflow
