#include "core/config.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow {
namespace config_test {

enum class ShardPolicy { kFile, kRecord, kAuto };

struct Options {
  std::vector<std::string> files;
  std::string format = "tfrecord";
  ShardPolicy shard_policy = ShardPolicy::kAuto;
  int batch_size = 32;
  int64_t steps = 1000;
  size_t buffer = 1024;
  double lr = 0.1;
  float momentum = 0.9f;
  bool deterministic = false;
  std::vector<int> hidden = {512, 256};
  std::vector<int64_t> milestones;
  std::vector<double> weights = {0.5, 0.25};
  std::string name;
};

void Register(ConfigSchema& schema, Options* o) {
  schema.DescribeSection("data", "input files and pipeline");
  schema.Add("data", "files", &o->files, "input files");
  schema.AddChoice("data", "format", &o->format, {"tfrecord", "hdf5"}, "record format");
  schema.AddChoice<ShardPolicy>("data", "shard_policy", &o->shard_policy,
                                {{"file", ShardPolicy::kFile},
                                 {"record", ShardPolicy::kRecord},
                                 {"auto", ShardPolicy::kAuto}},
                                "how files are split across ranks");
  schema.Add("data", "buffer", &o->buffer, "shuffle buffer in elements");
  schema.Add("model", "hidden", &o->hidden, "hidden layer widths");
  schema.Add("train", "batch_size", &o->batch_size, "samples per step per rank").Positive();
  schema.Add("train", "steps", &o->steps, "steps to train").NonNegative();
  schema.Add("train", "lr", &o->lr, "learning rate").Positive();
  schema.Add("train", "momentum", &o->momentum, "SGD momentum").InRange(0.0f, 1.0f);
  schema.Add("train", "deterministic", &o->deterministic, "reproducible order");
  schema.Add("train", "milestones", &o->milestones, "steps where the learning rate drops");
  schema.Add("train", "weights", &o->weights, "class weights");
  schema.Add("log", "name", &o->name, "run name");
}

// Parses `text` into fresh options; returns them.
Options ParseText(const std::string& text, const std::vector<ConfigOverride>& overrides = {}) {
  Options o;
  ConfigSchema schema;
  Register(schema, &o);
  schema.ParseString(text, "exp.ini", overrides);
  return o;
}

// The message of the Error that parsing `text` throws.
std::string ParseError(const std::string& text, const std::vector<ConfigOverride>& overrides = {}) {
  try {
    ParseText(text, overrides);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

TEST(ConfigTest, GoodFileSetsEveryType) {
  const Options o = ParseText(
      "# an experiment\n"
      "[data]\n"
      "files = a.tfrecord, b.tfrecord ,c.tfrecord\n"
      "format = HDF5   # case does not matter\n"
      "shard_policy = record\n"
      "buffer = 18446744073709551615\n"
      "\n"
      "[model]\n"
      "hidden = 64\n"
      "[train]\n"
      "batch_size = 512\n"
      "steps = -0\n"
      "lr = 1e-3\n"
      "momentum = 0.95\n"
      "deterministic = yes\n"
      "milestones = 9000000000, 9000000001\n"
      "weights = -1.5, 2, +3\n"
      "[log]\n"
      "name = run one\n");
  EXPECT_EQ(o.files, (std::vector<std::string>{"a.tfrecord", "b.tfrecord", "c.tfrecord"}));
  EXPECT_EQ(o.format, "hdf5");
  EXPECT_EQ(o.shard_policy, ShardPolicy::kRecord);
  EXPECT_EQ(o.buffer, std::numeric_limits<size_t>::max());
  EXPECT_EQ(o.hidden, std::vector<int>{64});
  EXPECT_EQ(o.batch_size, 512);
  EXPECT_EQ(o.steps, 0);
  EXPECT_EQ(o.lr, 1e-3);
  EXPECT_EQ(o.momentum, 0.95f);
  EXPECT_TRUE(o.deterministic);
  EXPECT_EQ(o.milestones, (std::vector<int64_t>{9000000000LL, 9000000001LL}));
  EXPECT_EQ(o.weights, (std::vector<double>{-1.5, 2, 3}));
  EXPECT_EQ(o.name, "run one");
}

TEST(ConfigTest, EmptyFileKeepsDefaultsAndSourcesAreDefault) {
  Options o;
  ConfigSchema schema;
  Register(schema, &o);
  schema.ParseString("", "empty.ini");
  const Options defaults;
  EXPECT_EQ(o.batch_size, defaults.batch_size);
  EXPECT_EQ(o.hidden, defaults.hidden);
  EXPECT_EQ(schema.SourceOf("train.batch_size").ToString(), "default");
  // Comments and blank lines only, and CRLF line ends.
  schema.ParseString("# nothing\r\n\r\n   \t\r\n", "blank.ini");
  EXPECT_EQ(o.lr, defaults.lr);
}

TEST(ConfigTest, UnknownKeyNamesKeyFileAndLine) {
  const std::string message = ParseError("[train]\nbatch_size = 4\n\nbatch_sise = 8\n");
  EXPECT_NE(message.find("exp.ini:4"), std::string::npos) << message;
  EXPECT_NE(message.find("unknown config key 'train.batch_sise'"), std::string::npos) << message;
  EXPECT_NE(message.find("did you mean 'train.batch_size'"), std::string::npos) << message;
}

// Another framework's name for a key (Keras' learning_rate) is answered with ours.
TEST(ConfigTest, OtherFrameworksNamesSuggestOurs) {
  const std::string message = ParseError("[train]\nlearning_rate = 0.1\n");
  EXPECT_NE(message.find("did you mean 'train.lr'"), std::string::npos) << message;
}

TEST(ConfigTest, UnknownSectionAndStructuralErrorsHaveFileAndLine) {
  std::string m = ParseError("[trian]\nbatch_size = 4\n");
  EXPECT_NE(m.find("exp.ini:1: unknown config section [trian]"), std::string::npos) << m;
  EXPECT_NE(m.find("did you mean [train]"), std::string::npos) << m;
  m = ParseError("# header\nbatch_size = 4\n[train]\n");
  EXPECT_NE(m.find("exp.ini:2: key 'batch_size' is outside any section"), std::string::npos) << m;
  m = ParseError("[train]\nbatch_size 4\n");
  EXPECT_NE(m.find("exp.ini:2: malformed line 'batch_size 4'"), std::string::npos) << m;
  m = ParseError("[train\n");
  EXPECT_NE(m.find("exp.ini:1: malformed section header"), std::string::npos) << m;
  m = ParseError("[train]\n= 4\n");
  EXPECT_NE(m.find("exp.ini:2: malformed key"), std::string::npos) << m;
  m = ParseError("[train]\nlr = 1\n[data]\nbuffer = 2\n[train]\nlr = 2\n");
  EXPECT_NE(m.find("exp.ini:6: duplicate key 'train.lr' (first set at line 2)"), std::string::npos)
      << m;
}

TEST(ConfigTest, BadValueNamesKeyValueTypeAndPlace) {
  std::string m = ParseError("[train]\n\nbatch_size = 12x\n");
  EXPECT_NE(m.find("exp.ini:3: bad value '12x' for train.batch_size: expected int"),
            std::string::npos)
      << m;
  m = ParseError("[train]\nbatch_size = 3000000000\n");
  EXPECT_NE(m.find("expected int (out of range)"), std::string::npos) << m;
  m = ParseError("[data]\nbuffer = -1\n");
  EXPECT_NE(m.find("bad value '-1' for data.buffer: expected size_t"), std::string::npos) << m;
  m = ParseError("[train]\ndeterministic = maybe\n");
  EXPECT_NE(m.find("bad value 'maybe' for train.deterministic: expected bool"), std::string::npos)
      << m;
  m = ParseError("[data]\nformat = csv\n");
  EXPECT_NE(m.find("expected one of: tfrecord, hdf5"), std::string::npos) << m;
  m = ParseError("[model]\nhidden = 1, two, 3\n");
  EXPECT_NE(m.find("expected comma-separated list of int (item 1 'two' is not a valid int)"),
            std::string::npos)
      << m;
  m = ParseError("[model]\nhidden = 1,,3\n");
  EXPECT_NE(m.find("item 1 '' is empty"), std::string::npos) << m;
  m = ParseError("[model]\nhidden = 1, 2,\n");
  EXPECT_NE(m.find("item 2 is empty"), std::string::npos) << m;
  m = ParseError("[train]\nlr = fast\n");
  EXPECT_NE(m.find("expected double"), std::string::npos) << m;
  m = ParseError("", {{"train.momentum", "0.5.1"}});
  EXPECT_NE(m.find("command line: bad value '0.5.1' for train.momentum: expected float"),
            std::string::npos)
      << m;
}

TEST(ConfigTest, ChecksNameKeyValueAndSource) {
  std::string m = ParseError("[train]\nbatch_size = 0\n");
  EXPECT_NE(m.find("exp.ini:2: train.batch_size = '0' must be > 0"), std::string::npos) << m;
  m = ParseError("", {{"train.momentum", "1.5"}});
  EXPECT_NE(m.find("command line: train.momentum = '1.5' must be in [0, 1]"), std::string::npos)
      << m;
  // A check on a default: the key must be set somewhere.
  std::string path;
  ConfigSchema schema;
  schema.Add("data", "path", &path, "input").NonEmpty();
  try {
    schema.ParseString("", "x.ini");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("default: data.path = '' must not be empty"),
              std::string::npos)
        << e.what();
  }
}

TEST(ConfigTest, CommandLineOverridesWinOverFileAndLaterOverridesWin) {
  Options o;
  ConfigSchema schema;
  Register(schema, &o);
  schema.ParseString("[train]\nbatch_size = 64\nlr = 0.5\n", "exp.ini",
                     {{"train.batch_size", "128"}, {"train.batch_size", " 256 "}});
  EXPECT_EQ(o.batch_size, 256);
  EXPECT_EQ(o.lr, 0.5);
  EXPECT_EQ(schema.SourceOf("train.batch_size").ToString(), "command line");
  EXPECT_EQ(schema.SourceOf("train.lr").ToString(), "exp.ini:3");
  const std::string m = ParseError("", {{"train.batchsize", "1"}});
  EXPECT_NE(m.find("command line: unknown config key 'train.batchsize'"), std::string::npos) << m;
}

TEST(ConfigTest, BoolSpellings) {
  for (const char* yes : {"true", "TRUE", "1", "yes", "Yes", "on", "ON"}) {
    EXPECT_TRUE(ParseText(std::string("[train]\ndeterministic = ") + yes).deterministic) << yes;
  }
  for (const char* no : {"false", "False", "0", "no", "NO", "off", "Off"}) {
    Options o = ParseText(std::string("[train]\ndeterministic = ") + no, {});
    EXPECT_FALSE(o.deterministic) << no;
  }
  for (const char* bad : {"", "2", "y", "truee", "-1"}) {
    ParseError(std::string("[train]\ndeterministic = ") + bad);
  }
}

TEST(ConfigTest, ListsEmptyAndSingle) {
  Options o = ParseText("[model]\nhidden =\n[train]\nweights = 1e300\n[data]\nfiles = x\n");
  EXPECT_TRUE(o.hidden.empty());
  EXPECT_EQ(o.weights, std::vector<double>{1e300});
  EXPECT_EQ(o.files, std::vector<std::string>{"x"});
}

TEST(ConfigTest, StringsThatCannotLiveInAnIniFileAreRejected) {
  std::string m = ParseError("", {{"log.name", "a#b"}});
  EXPECT_NE(m.find("cannot contain '#'"), std::string::npos) << m;
  // A comment ends the value in a file, as in Boost.
  EXPECT_EQ(ParseText("[log]\nname = a # b\n").name, "a");
}

TEST(ConfigTest, HelpListsEveryKeyWithDefaultAndDescription) {
  Options o;
  ConfigSchema schema;
  Register(schema, &o);
  const std::string help = schema.HelpText();
  for (const std::string& key : schema.Keys()) {
    const std::string bare = key.substr(key.find('.') + 1);
    EXPECT_NE(help.find("  " + bare + " = "), std::string::npos) << key << "\n" << help;
  }
  EXPECT_NE(help.find("[data]  input files and pipeline"), std::string::npos) << help;
  EXPECT_NE(help.find("batch_size = 32"), std::string::npos) << help;
  EXPECT_NE(help.find("samples per step per rank [int, must be > 0]"), std::string::npos) << help;
  EXPECT_NE(help.find("hidden = 512, 256"), std::string::npos) << help;
  EXPECT_NE(help.find("[one of: file, record, auto]"), std::string::npos) << help;
  EXPECT_EQ(schema.Keys().size(), 13u);
}

TEST(ConfigTest, ResolvedIniRoundTripsExactly) {
  testing::ScratchDir dir("config_round_trip");
  Options a;
  ConfigSchema first;
  Register(first, &a);
  first.ParseString(
      "[data]\nfiles = a, b\nshard_policy = file\n[train]\nlr = 0.1\nweights = 0.3, "
      "1e-300, -0\n",
      "exp.ini",
      {{"train.momentum", "0.7"},
       {"train.steps", "7"},
       {"log.name", "x y"},
       {"train.milestones", "1,2,3"}});
  const std::string path = (dir / "resolved.ini").string();
  first.SaveResolved(path);

  Options b;
  ConfigSchema second;
  Register(second, &b);
  second.Parse(path);
  EXPECT_EQ(b.files, a.files);
  EXPECT_EQ(b.format, a.format);
  EXPECT_EQ(b.shard_policy, ShardPolicy::kFile);
  EXPECT_EQ(b.buffer, a.buffer);
  EXPECT_EQ(b.hidden, a.hidden);
  EXPECT_EQ(b.batch_size, a.batch_size);
  EXPECT_EQ(b.steps, 7);
  EXPECT_EQ(b.lr, a.lr);
  EXPECT_EQ(b.momentum, a.momentum);
  EXPECT_EQ(b.deterministic, a.deterministic);
  EXPECT_EQ(b.milestones, a.milestones);
  ASSERT_EQ(b.weights.size(), 3u);
  EXPECT_EQ(b.weights, a.weights);
  EXPECT_TRUE(std::signbit(b.weights[2]));
  EXPECT_EQ(b.name, "x y");
  for (const std::string& key : first.Keys()) {
    EXPECT_EQ(second.ValueText(key), first.ValueText(key)) << key;
  }
}

TEST(ConfigTest, ResolvedTableHasEveryKeyValueAndSource) {
  Options o;
  ConfigSchema schema;
  Register(schema, &o);
  schema.ParseString("[train]\nbatch_size = 64\n", "exp.ini", {{"train.lr", "0.25"}});
  const std::string table = schema.ResolvedTable();
  const size_t row = table.find("  train.batch_size ");
  ASSERT_NE(row, std::string::npos) << table;
  const std::string line = table.substr(row, table.find('\n', row) - row);
  EXPECT_NE(line.find(" 64 "), std::string::npos) << line;
  EXPECT_NE(line.find("exp.ini:2"), std::string::npos) << line;
  EXPECT_NE(table.find("exp.ini:2"), std::string::npos) << table;
  EXPECT_NE(table.find("0.25"), std::string::npos) << table;
  EXPECT_NE(table.find("command line"), std::string::npos) << table;
  for (const std::string& key : schema.Keys()) EXPECT_NE(table.find(key), std::string::npos);
}

TEST(ConfigTest, RegistrationBugsAreInternalErrors) {
  int x = 1;
  int y = 2;
  std::string s = "a#b";
  std::string choice = "neither";
  std::vector<std::string> list = {"a,b"};
  ConfigSchema schema;
  schema.Add("train", "x", &x, "x");
  EXPECT_THROW(schema.Add("train", "x", &y, "again"), Error);
  EXPECT_THROW(schema.Add("Train", "y", &y, "upper case"), Error);
  EXPECT_THROW(schema.Add("train", "y", &y, ""), Error);
  EXPECT_THROW(schema.Add("train", "s", &s, "bad default"), Error);
  EXPECT_THROW(schema.AddChoice("train", "c", &choice, {"a", "b"}, "bad default"), Error);
  EXPECT_THROW(schema.Add("train", "l", &list, "item with a comma"), Error);
  EXPECT_THROW(schema.SourceOf("train.nope"), Error);
}

TEST(ConfigTest, MissingFileIsNotFound) {
  ConfigSchema schema;
  try {
    schema.Parse("/nonexistent/exp.ini");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/exp.ini"), std::string::npos);
  }
}

TEST(ConfigTest, OnResolvedHooksRunAfterChecks) {
  int a = 1;
  int b = 2;
  int calls = 0;
  ConfigSchema schema;
  schema.Add("train", "a", &a, "a");
  schema.Add("train", "b", &b, "b");
  schema.OnResolved([&] {
    ++calls;
    if (a > b) throw Error(ErrorCode::kInvalidArgument, "train.a must not exceed train.b");
  });
  schema.ParseString("[train]\na = 2\n", "x.ini");
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(schema.ParseString("", "y.ini", {{"train.a", "3"}}), Error);
}

// The line scan and Boost must read the same text the same way.
TEST(ConfigTest, CrlfTabsAndEqualsInValuesAgreeWithBoost) {
  std::string name;
  int batch = 0;
  ConfigSchema schema;
  schema.Add("train", "batch_size", &batch, "samples per step");
  schema.Add("log", "name", &name, "run name");
  schema.ParseString("[train]\r\n\tbatch_size\t=\t7\t\r\n[log]\r\nname = a=b c \r\n", "crlf.ini");
  EXPECT_EQ(batch, 7);
  EXPECT_EQ(name, "a=b c");
  EXPECT_EQ(schema.SourceOf("log.name").ToString(), "crlf.ini:4");
}

}  // namespace config_test
}  // namespace shardflow
