// AppSpec::OptionalValue: a flag that is a switch alone and takes a choice after '='
// (shardflow-train's --resume and --resume=auto).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cli.hpp"
#include "core/error.hpp"

namespace shardflow {
namespace cli_optional_value_test {

struct ResumeApp {
  std::string resume;
  ConfigSchema schema;
  AppSpec spec{"shardflow-test", "a test program"};

  ResumeApp() {
    spec.OptionalValue("resume", &resume, "latest", {"latest", "auto"}, "continue a run");
  }
  void Split(std::vector<const char*> args) {
    args.insert(args.begin(), "prog");
    SplitCommandLine(static_cast<int>(args.size()), args.data(), schema, spec);
  }
};

TEST(OptionalValueTest, BareFlagTakesTheBareValue) {
  ResumeApp app;
  app.Split({"--resume"});
  EXPECT_EQ(app.resume, "latest");
}

TEST(OptionalValueTest, InlineValueMustBeAChoice) {
  ResumeApp app;
  app.Split({"--resume=auto"});
  EXPECT_EQ(app.resume, "auto");
  ResumeApp unset;
  unset.Split({});
  EXPECT_EQ(unset.resume, "");
  ResumeApp bad;
  try {
    bad.Split({"--resume=sometimes"});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "bad value 'sometimes' for --resume: expected one of latest, auto"),
              std::string::npos)
        << e.what();
  }
}

TEST(OptionalValueTest, HelpShowsTheChoices) {
  ResumeApp app;
  const std::string help = CommandLineHelp(app.schema, app.spec);
  EXPECT_NE(help.find("[--resume[=latest|auto]]"), std::string::npos) << help;
  EXPECT_NE(help.find("  --resume[=latest|auto]  continue a run"), std::string::npos) << help;
}

}  // namespace cli_optional_value_test
}  // namespace shardflow
