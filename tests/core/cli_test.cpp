#include "core/cli.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/logging.hpp"
#include "core/mpi_env.hpp"

namespace shardflow {
namespace cli_test {

struct App {
  int batch_size = 32;
  bool deterministic = false;
  std::string output = "out";
  bool resume = false;
  std::vector<std::string> files;
  ConfigSchema schema;
  AppSpec spec{"shardflow-test", "a test program"};

  explicit App(bool positionals = false) {
    schema.Add("train", "batch_size", &batch_size, "samples per step").Positive();
    schema.Add("train", "deterministic", &deterministic, "reproducible order");
    spec.Flag("output", &output, "DIR", "where outputs go").Switch("resume", &resume, "resume");
    if (positionals) spec.Positionals(&files, "FILE", "input files", 1);
  }
  CommandLine Split(std::vector<const char*> args) {
    args.insert(args.begin(), "prog");
    return SplitCommandLine(static_cast<int>(args.size()), args.data(), schema, spec);
  }
};

std::string SplitError(App& app, std::vector<const char*> args) {
  try {
    app.Split(std::move(args));
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(CommandLineTest, SplitsConfigOverridesAndAppFlags) {
  App app;
  const CommandLine cl =
      app.Split({"--config", "exp.ini", "--train.batch_size=64", "--output", "/tmp/x",
                 "--train.batch_size", "128", "--resume", "--train.deterministic"});
  EXPECT_FALSE(cl.help);
  EXPECT_EQ(cl.config_path, "exp.ini");
  ASSERT_EQ(cl.overrides.size(), 3u);
  EXPECT_EQ(cl.overrides[0].key, "train.batch_size");
  EXPECT_EQ(cl.overrides[0].value, "64");
  EXPECT_EQ(cl.overrides[1].value, "128");
  EXPECT_EQ(cl.overrides[2].key, "train.deterministic");
  EXPECT_EQ(cl.overrides[2].value, "true");
  EXPECT_EQ(app.output, "/tmp/x");
  EXPECT_TRUE(app.resume);

  App other;
  const CommandLine cl2 = other.Split({"--config=b.ini", "--resume=no", "--output=o"});
  EXPECT_EQ(cl2.config_path, "b.ini");
  EXPECT_FALSE(other.resume);
  EXPECT_EQ(other.output, "o");
}

TEST(CommandLineTest, UnknownFlagsAreErrorsNamingTheFlag) {
  App app;
  std::string m = SplitError(app, {"--outptu", "x"});
  EXPECT_NE(m.find("command line: unknown flag '--outptu'"), std::string::npos) << m;
  m = SplitError(app, {"--train.batchsize=3"});
  EXPECT_NE(m.find("unknown config key 'train.batchsize'"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean '--train.batch_size'"), std::string::npos) << m;
  m = SplitError(app, {"--batch_size=3"});
  EXPECT_NE(m.find("unknown flag '--batch_size'"), std::string::npos) << m;
  EXPECT_NE(m.find("--train.batch_size"), std::string::npos) << m;
  m = SplitError(app, {"-x"});
  EXPECT_NE(m.find("unknown flag '-x'"), std::string::npos) << m;
  m = SplitError(app, {"stray"});
  EXPECT_NE(m.find("unexpected argument 'stray'"), std::string::npos) << m;
  m = SplitError(app, {"--output"});
  EXPECT_NE(m.find("flag '--output' needs a value"), std::string::npos) << m;
  m = SplitError(app, {"--train.batch_size"});
  EXPECT_NE(m.find("needs a value"), std::string::npos) << m;
  m = SplitError(app, {"--config", "a", "--config", "b"});
  EXPECT_NE(m.find("--config given twice"), std::string::npos) << m;
  m = SplitError(app, {"--resume=perhaps"});
  EXPECT_NE(m.find("bad value 'perhaps' for --resume"), std::string::npos) << m;
}

TEST(CommandLineTest, PositionalsAndHelpWins) {
  App app(/*positionals=*/true);
  std::string m = SplitError(app, {});
  EXPECT_NE(m.find("expected at least 1 FILE"), std::string::npos) << m;
  App app2(true);
  app2.Split({"a.tfrecord", "--resume", "--", "--weird-name"});
  EXPECT_EQ(app2.files, (std::vector<std::string>{"a.tfrecord", "--weird-name"}));
  App app3;
  EXPECT_TRUE(app3.Split({"--bogus", "--help"}).help);
  EXPECT_TRUE(app3.Split({"-h"}).help);
}

TEST(CommandLineTest, HelpListsFlagsAndEveryKey) {
  App app;
  LogOptions log;
  RegisterLogOptions(app.schema, &log);
  const std::string help = CommandLineHelp(app.schema, app.spec);
  for (const char* text :
       {"usage: shardflow-test [--config FILE]", "a test program", "--output DIR", "(default: out)",
        "--resume", "--help", "[train]", "batch_size = 32", "deterministic = false", "[log]",
        "level = ", "file = "}) {
    EXPECT_NE(help.find(text), std::string::npos) << text << "\n" << help;
  }
}

TEST(CommandLineTest, ParseCommandLineAppliesLogSection) {
  const LogLevel before = GetLogLevel();
  App app;
  app.spec.PrintResolved(false);
  std::vector<const char*> args = {"prog", "--log.level=debug", "--train.batch_size", "7"};
  ParseCommandLine(static_cast<int>(args.size()), args.data(), app.schema, app.spec);
  EXPECT_EQ(app.batch_size, 7);
  EXPECT_EQ(GetLogLevel(), LogLevel::kDebug);
  EXPECT_TRUE(app.schema.Has("log.file"));
  SetLogLevel(before);

  App bad;
  std::vector<const char*> bad_args = {"prog", "--log.level=loud"};
  EXPECT_THROW(ParseCommandLine(2, bad_args.data(), bad.schema, bad.spec), Error);
}

TEST(CommandLineTest, HelpThrowsEarlyExit) {
  App app;
  std::vector<const char*> args = {"prog", "--help"};
  testing::internal::CaptureStdout();
  EXPECT_THROW(ParseCommandLine(2, args.data(), app.schema, app.spec), EarlyExit);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("batch_size = 32"), std::string::npos) << out;
}

}  // namespace cli_test
}  // namespace shardflow
