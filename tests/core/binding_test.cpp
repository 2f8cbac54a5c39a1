#include "core/binding.hpp"

#include <gtest/gtest.h>

namespace shardflow {
namespace binding_test {

TEST(BindingTest, CoreListsCompress) {
  EXPECT_EQ(FormatCoreList({}), "");
  EXPECT_EQ(FormatCoreList({3}), "3");
  EXPECT_EQ(FormatCoreList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCoreList({5, 4}), "4-5");
}

TEST(BindingTest, DisjointBindingsHaveNoConflicts) {
  std::vector<Binding> b = {{0, "n1", 0, "0", {0, 1}},
                            {1, "n1", 1, "1", {2, 3}},
                            {2, "n2", 0, "0", {0, 1}},
                            {3, "n2", 1, "1", {2, 3}}};
  EXPECT_TRUE(FindBindingConflicts(b).empty());
  const std::string table = FormatBindingTable(b);
  EXPECT_NE(table.find("rank  host local gpu      cores"), std::string::npos) << table;
  EXPECT_NE(table.find("3     n2   1     1        2-3"), std::string::npos) << table;
}

TEST(BindingTest, SharedGpuAndSharedCoresAreNamed) {
  std::vector<Binding> b = {{0, "n1", 0, "0", {0, 1}},
                            {1, "n1", 1, "0", {1, 2}},
                            {2, "n2", 0, "-", {0, 1}},
                            {3, "n2", 1, "-", {0, 1}}};
  const auto c = FindBindingConflicts(b);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0], "ranks 0 and 1 share GPU 0 on n1");
  EXPECT_EQ(c[1], "ranks 0 and 1 share core 1 on n1");
  EXPECT_EQ(c[2], "ranks 2 and 3 share core 0 on n2");
}

TEST(BindingTest, CurrentBindingSeesThisProcess) {
  const Binding b = CurrentBinding(0, 0);
  EXPECT_FALSE(b.host.empty());
  EXPECT_FALSE(b.cores.empty());
}

}  // namespace binding_test
}  // namespace shardflow
