// ToModelBatch (apps/common/model_batch.hpp): model.input_scale applies to uint8 inputs only
// (issue 20, item 3: float32 features used to be divided by 255 silently).
#include "apps/common/model_batch.hpp"

#include <gtest/gtest.h>

namespace shardflow::apps {
namespace model_batch_test {

pipeline::Element BatchOf(Tensor input) {
  pipeline::Element e;
  e.Set("x", std::move(input));
  return e;
}

TEST(ModelBatchTest, FloatInputsAreNotScaled) {
  Tensor in(DType::kFloat32, {2, 3});
  for (int i = 0; i < 6; ++i) in.data<float>()[i] = 0.25f * static_cast<float>(i) - 0.5f;
  const BatchSpec spec{
      .input_feature = "x", .label_feature = "", .input_shape = {3}, .scale = 1.0 / 255.0};
  Tensor scratch;
  const ModelBatch out = ToModelBatch(BatchOf(in), spec, &scratch);
  ASSERT_EQ(out.rows, 2);
  ASSERT_EQ(out.x.dtype(), DType::kFloat32);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(out.x.data<float>()[i], 0.25f * static_cast<float>(i) - 0.5f) << "element " << i;
  }
}

TEST(ModelBatchTest, Uint8InputsAreScaled) {
  Tensor in(DType::kUInt8, {1, 2});
  in.data<uint8_t>()[0] = 255;
  in.data<uint8_t>()[1] = 51;
  const BatchSpec spec{
      .input_feature = "x", .label_feature = "", .input_shape = {2}, .scale = 1.0 / 255.0};
  Tensor scratch;
  const ModelBatch out = ToModelBatch(BatchOf(in), spec, &scratch);
  EXPECT_FLOAT_EQ(out.x.data<float>()[0], 1.0f);
  EXPECT_FLOAT_EQ(out.x.data<float>()[1], 0.2f);
}

}  // namespace model_batch_test
}  // namespace shardflow::apps
