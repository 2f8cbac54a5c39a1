// The check the partitioned-checkpoint tests share: a part holds the values of the model it
// was cut from (or loaded from that model's file).
// Thread-safety: test code, one thread.
#pragma once

#include <gtest/gtest.h>

#include "tests/io/checkpoint_part_util.hpp"

namespace shardflow::testing {

// Every parameter and slot element of `part` equals that of `whole` (the whole model, or a
// part holding the same layers unsplit) at the same place, and so do its buffers.
inline void ExpectHoldsValuesOf(const CheckpointPart& part, Sequential<float>& whole,
                                Optimizer& whole_opt) {
  const std::vector<NamedTensor> ws = whole_opt.Slots(), ps = part.optimizer->Slots();
  for (const ParamSpec& s : part.specs) {
    const ParamSpec* full = nullptr;
    for (const ParamSpec& x : whole.arena().specs())
      if (x.FullName() == s.FullName()) full = &x;
    ASSERT_NE(full, nullptr) << s.FullName();
    const int64_t extent = s.split_axis < 0 ? 0 : s.shape[static_cast<size_t>(s.split_axis)];
    auto want = [&](const float* base) {
      return SliceOf(base + full->offset, full->shape, s.split_axis, s.split_begin, extent);
    };
    auto got = [&](const float* base) {
      return std::vector<float>(base + s.offset, base + s.offset + s.size);
    };
    EXPECT_EQ(got(part.params), want(whole.arena().params())) << s.FullName();
    for (size_t k = 0; k < ws.size(); ++k) {
      EXPECT_EQ(got(ps[k].tensor->data<float>()), want(ws[k].tensor->data<float>()))
          << s.FullName() << " slot " << ws[k].name;
    }
  }
  EXPECT_EQ(part.optimizer->iterations(), whole_opt.iterations());
  for (const NamedTensor& b : part.buffers) {
    for (const NamedTensor& w : whole.Buffers()) {
      if (w.name != b.name) continue;
      EXPECT_EQ(std::vector<float>(b.tensor->data<float>(),
                                   b.tensor->data<float>() + b.tensor->num_elements()),
                std::vector<float>(w.tensor->data<float>(),
                                   w.tensor->data<float>() + w.tensor->num_elements()))
          << b.name;
    }
  }
}

}  // namespace shardflow::testing
