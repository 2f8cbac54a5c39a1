// The one parser of SHARDFLOW_* variables (core/environment.hpp): every value outside a
// variable's rule is refused naming the variable; unset and empty mean the default; a name
// outside the table is a bug.
#include "core/environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "core/error.hpp"

namespace shardflow::env {
namespace environment_test {

// Sets `name` to `value` for its scope (unset when value is null), and restores it.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedVariable() {
    if (had_) {
      ::setenv(name_, old_.c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

std::string Refusal(const std::function<void()>& read) {
  try {
    read();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

TEST(Environment, IntegersFollowTheirRule) {
  {
    ScopedVariable v("SHARDFLOW_THREADS", nullptr);
    EXPECT_EQ(Int("SHARDFLOW_THREADS", 0, 1), 0);
  }
  {
    ScopedVariable v("SHARDFLOW_THREADS", "");
    EXPECT_EQ(Int("SHARDFLOW_THREADS", 7, 1), 7);
  }
  {
    ScopedVariable v("SHARDFLOW_THREADS", "3");
    EXPECT_EQ(Int("SHARDFLOW_THREADS", 0, 1), 3);
  }
  for (const char* bad : {"0", "-2", "4x", "x", "99999999999999999999"}) {
    ScopedVariable v("SHARDFLOW_THREADS", bad);
    const std::string why = Refusal([] { Int("SHARDFLOW_THREADS", 0, 1); });
    EXPECT_NE(why.find("SHARDFLOW_THREADS = '" + std::string(bad) + "' is not an integer >= 1"),
              std::string::npos)
        << why;
  }
}

TEST(Environment, ChoicesAndFlags) {
  {
    ScopedVariable v("SHARDFLOW_PROGRESS", "plain");
    EXPECT_EQ(Choice("SHARDFLOW_PROGRESS", "auto", {"auto", "bar", "plain"}), "plain");
  }
  {
    ScopedVariable v("SHARDFLOW_PROGRESS", "fancy");
    EXPECT_NE(Refusal([] {
                Choice("SHARDFLOW_PROGRESS", "auto", {"auto", "bar", "plain"});
              }).find("SHARDFLOW_PROGRESS = 'fancy' is not one of auto, bar, plain"),
              std::string::npos);
  }
  {
    ScopedVariable v("SHARDFLOW_SIMULATE_CUDA", "1");
    EXPECT_TRUE(Flag("SHARDFLOW_SIMULATE_CUDA"));
  }
  {
    ScopedVariable v("SHARDFLOW_SIMULATE_CUDA", "0");
    EXPECT_FALSE(Flag("SHARDFLOW_SIMULATE_CUDA"));
  }
  {
    ScopedVariable v("SHARDFLOW_SIMULATE_CUDA", "yes");
    EXPECT_NE(Refusal([] { Flag("SHARDFLOW_SIMULATE_CUDA"); }).find("SHARDFLOW_SIMULATE_CUDA"),
              std::string::npos);
  }
}

TEST(Environment, ANameOutsideTheTableIsABug) {
  try {
    Text("SHARDFLOW_NO_SUCH_VARIABLE");
    FAIL() << "read a variable the table does not list";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
  }
}

TEST(Environment, HelpListsEveryVariableOnce) {
  const std::string help = Help();
  for (const Variable& v : Variables()) {
    const std::string line = "  " + std::string(v.name) + " (";
    const size_t at = help.find(line);
    ASSERT_NE(at, std::string::npos) << v.name;
    EXPECT_EQ(help.find(line, at + 1), std::string::npos) << v.name;
  }
}

}  // namespace environment_test
}  // namespace shardflow::env
