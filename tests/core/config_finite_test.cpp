// Float config keys refuse NaN and infinities, in files and on the command line, naming the key.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"

namespace shardflow {
namespace config_finite_test {

struct Values {
  double lr = 0.1;
  float momentum = 0.9f;
  std::vector<double> mean = {0.5};
};

std::string ErrorOf(const std::string& text, const std::vector<ConfigOverride>& overrides = {}) {
  Values v;
  ConfigSchema schema;
  schema.Add("train", "lr", &v.lr, "learning rate");
  schema.Add("train", "momentum", &v.momentum, "momentum");
  schema.Add("data", "mean", &v.mean, "per-channel mean");
  try {
    schema.ParseString(text, "exp.ini", overrides);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "";
}

TEST(ConfigFiniteTest, NonFiniteValuesInAFileAreRefusedNamingKeyAndLine) {
  for (const std::string value : {"inf", "-inf", "nan", "NaN", "infinity", "+inf"}) {
    const std::string what = ErrorOf("[train]\nlr = " + value + "\n");
    EXPECT_NE(what.find("exp.ini:2"), std::string::npos) << value << ": " << what;
    EXPECT_NE(what.find("train.lr"), std::string::npos) << value << ": " << what;
    EXPECT_NE(what.find("not a finite number"), std::string::npos) << value << ": " << what;
  }
}

TEST(ConfigFiniteTest, NonFiniteOverridesAndListItemsAreRefused) {
  const std::string momentum = ErrorOf("", {{"train.momentum", "nan"}});
  EXPECT_NE(momentum.find("train.momentum"), std::string::npos) << momentum;
  const std::string mean = ErrorOf("[data]\nmean = 0.5, nan\n");
  EXPECT_NE(mean.find("data.mean"), std::string::npos) << mean;
  // Out of range is said as such, and finite values still parse.
  EXPECT_NE(ErrorOf("[train]\nlr = 1e400\n").find("out of range"), std::string::npos);
  EXPECT_EQ(ErrorOf("[train]\nlr = 1e6\nmomentum = 0\n[data]\nmean = -1.5, 2\n"), "");
}

}  // namespace config_finite_test
}  // namespace shardflow
