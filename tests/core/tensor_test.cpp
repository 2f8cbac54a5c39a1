#include "core/tensor.hpp"

#include <gtest/gtest.h>

#include <string>

namespace shardflow {
namespace tensor_test {

TEST(TensorTest, OwningTensorIsZeroedAndTyped) {
  Tensor t(DType::kFloat32, {2, 3});
  EXPECT_EQ(t.num_elements(), 6);
  EXPECT_EQ(t.byte_size(), 24u);
  EXPECT_TRUE(t.owns_storage());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<float>()[i], 0.0f);
  EXPECT_THROW(t.data<int64_t>(), Error);
}

TEST(TensorTest, ViewsSliceAndReshapeShareStorage) {
  int64_t values[6] = {0, 1, 2, 3, 4, 5};
  Tensor v = Tensor::View(values, DType::kInt64, {3, 2});
  EXPECT_FALSE(v.owns_storage());
  Tensor rows = v.Slice(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 2}));
  EXPECT_EQ(rows.data<int64_t>()[0], 2);
  Tensor flat = v.Reshaped({6});
  flat.data<int64_t>()[5] = 50;
  EXPECT_EQ(values[5], 50);
  EXPECT_THROW(v.Reshaped({4}), Error);
  EXPECT_THROW(v.Slice(2, 4), Error);
  Tensor copy = v.Clone();
  copy.data<int64_t>()[0] = 9;
  EXPECT_EQ(values[0], 0);
}

TEST(TensorTest, EmptyAndScalarShapes) {
  Tensor empty(DType::kUInt8, {0, 28});
  EXPECT_EQ(empty.num_elements(), 0);
  EXPECT_NE(empty.raw_data(), nullptr);
  Tensor scalar(DType::kInt32, {});
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_EQ(ShapeToString({128, 28, 28, 1}), "[128,28,28,1]");
  EXPECT_EQ(ParseDType("uint8"), DType::kUInt8);
  EXPECT_THROW(ParseDType("bfloat16"), Error);
  EXPECT_THROW(Tensor(DType::kFloat32, {-1}), Error);
}

TEST(TensorTest, HostAccessToADeviceTensorIsAnError) {
  float storage[4] = {1, 2, 3, 4};
  Tensor t = Tensor::View(storage, DType::kFloat32, {4}, Device::kCuda);
  try {
    t.data<float>();
    FAIL() << "host pointer handed out for a cuda tensor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("on device cuda"), std::string::npos) << e.what();
  }
  const Tensor& ct = t;
  EXPECT_THROW(ct.data<float>(), Error);
  EXPECT_THROW(t.Clone(), Error);
  EXPECT_EQ(t.device_data<float>(), storage);
  EXPECT_THROW(t.device_data<int32_t>(), Error);  // the dtype is still checked
}

}  // namespace tensor_test
}  // namespace shardflow
