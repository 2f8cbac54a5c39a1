// What a program's --help lists: keys the program sets itself (ConfigSchema::Disown) are left
// out, and a program that reads only part of a shared config lists that part (AppSpec::HelpKeys)
// and says the rest is accepted; a flag's default is shown once.
#include <gtest/gtest.h>

#include <string>

#include "core/cli.hpp"
#include "core/config.hpp"
#include "core/error.hpp"

namespace shardflow::help_keys_test {

struct Schema {
  Schema() {
    schema.DescribeSection("data", "input");
    schema.DescribeSection("train", "optimisation");
    schema.Add("data", "files", &files, "input files");
    schema.Add("data", "shuffle_buffer", &shuffle, "shuffle window");
    schema.Add("train", "lr", &lr, "learning rate");
    schema.Add("train", "device", &device, "where the layers run");
    schema.Add("train", "device_prefetch", &prefetch, "copy ahead");
  }
  ConfigSchema schema;
  std::string files, device = "cpu";
  int64_t shuffle = 0;
  double lr = 0.1;
  bool prefetch = true;
};

TEST(HelpKeys, DisownedKeysAreLeftOutOfTheHelpAndTheTable) {
  Schema s;
  s.schema.Disown("data.shuffle_buffer");
  const std::string help = s.schema.HelpText();
  EXPECT_EQ(help.find("shuffle_buffer"), std::string::npos) << help;
  EXPECT_NE(help.find("files ="), std::string::npos) << help;
  s.schema.Parse("", {});
  EXPECT_EQ(s.schema.ResolvedTable().find("data.shuffle_buffer"), std::string::npos);
  EXPECT_THROW(s.schema.Disown("data.nope"), Error);
}

TEST(HelpKeys, AProgramListsTheKeysItReadsAndSaysTheRestAreAccepted) {
  Schema s;
  std::string host = "127.0.0.1";
  AppSpec app("prog", "a program");
  app.Flag("host", &host, "ADDR", "address to listen on").HelpKeys({"train.device"});
  const std::string help = CommandLineHelp(s.schema, app);
  EXPECT_NE(help.find("device = cpu"), std::string::npos) << help;
  EXPECT_EQ(help.find("device_prefetch"), std::string::npos) << help;  // a whole key, not a prefix
  EXPECT_EQ(help.find("[data]"), std::string::npos) << help;
  EXPECT_EQ(help.find("lr ="), std::string::npos) << help;
  EXPECT_NE(help.find("are accepted and not used"), std::string::npos) << help;
  EXPECT_NE(help.find("address to listen on (default: 127.0.0.1)"), std::string::npos) << help;
  AppSpec sections("prog", "a program");
  sections.HelpKeys({"data."});
  const std::string data_help = CommandLineHelp(s.schema, sections);
  EXPECT_NE(data_help.find("shuffle_buffer ="), std::string::npos) << data_help;
  EXPECT_EQ(data_help.find("[train]"), std::string::npos) << data_help;
}

}  // namespace shardflow::help_keys_test
