// Regression test for a finding of tests/fuzz/fuzz_example_parser (bench/fuzz_long.sh,
// 2026-11-24): an empty packed float list, or a bytes list of empty values, decoded into the
// data() of an empty vector (nullptr) passed that null pointer to memcpy, which UBSan reports
// (the sanitizer build of this test aborts without the fix in io/example.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "io/example.hpp"

namespace shardflow::io {
namespace example_empty_list_test {

std::string Len(char tag, const std::string& body) {  // bodies here are < 128 bytes
  return std::string(1, tag) + static_cast<char>(body.size()) + body;
}
// Example { features { feature { key: name, value: feature } } }
std::string ExampleWith(const std::string& name, const std::string& feature) {
  return Len(0x0a, Len(0x0a, Len(0x0a, name) + Len(0x12, feature)));
}

TEST(ExampleEmptyLists, EmptyPackedFloatsCopyIntoAnEmptyVector) {
  // Feature { float_list (field 2) { value (field 1, packed): [] } }
  const std::string bytes = ExampleWith("f", Len(0x12, Len(0x0a, "")));
  ExampleView view;
  ASSERT_TRUE(ParseExample(bytes, &view).ok());
  ASSERT_EQ(view.features().size(), 1u);
  const FeatureView& f = view.features()[0];
  ASSERT_EQ(f.kind, FeatureKind::kFloat);
  ASSERT_EQ(f.num_values, 0);
  std::vector<float> out;
  f.CopyFloats(out.data());
  EXPECT_TRUE(out.empty());
}

TEST(ExampleEmptyLists, EmptyBytesValuesCopyIntoAnEmptyVector) {
  // Feature { bytes_list (field 1) { value: "", value: "" } }
  const std::string bytes = ExampleWith("b", Len(0x0a, Len(0x0a, "") + Len(0x0a, "")));
  ExampleView view;
  ASSERT_TRUE(ParseExample(bytes, &view).ok());
  ASSERT_EQ(view.features().size(), 1u);
  const FeatureView& f = view.features()[0];
  ASSERT_EQ(f.kind, FeatureKind::kBytes);
  ASSERT_EQ(f.num_values, 2);
  ASSERT_EQ(f.total_bytes, 0u);
  std::vector<uint8_t> out;
  f.CopyBytes(out.data());
  EXPECT_TRUE(out.empty());
}

}  // namespace example_empty_list_test
}  // namespace shardflow::io
