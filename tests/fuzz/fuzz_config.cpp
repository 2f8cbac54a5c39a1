// libFuzzer target: the INI config reader (core/ini_scan.hpp ScanIni, core/config.hpp
// ConfigSchema::ParseString) on arbitrary text, against a small schema with keys of every value
// type (int, int64, double, float, bool, string, choice, int and string lists) and checks. The
// input up to the first NUL is the INI text; each line after it is a command-line override
// "section.key=value". Bad input must end in shardflow::Error. An accepted config must round-trip:
// ResolvedIni() parsed by a fresh schema gives the same value text for every key.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/ini_scan.hpp"

using namespace shardflow;

namespace {

struct FuzzOptions {
  int batch = 32;
  int64_t steps = 100;
  double lr = 0.1;
  float momentum = 0.9f;
  bool shuffle = true;
  std::string name = "run";
  std::string optimizer = "sgd";
  std::vector<int> dims = {4, 2};
  std::vector<std::string> files = {"a.csv"};
};

void Register(ConfigSchema& schema, FuzzOptions* o) {
  schema.DescribeSection("train", "training");
  schema.Add("train", "batch", &o->batch, "samples per step").Positive();
  schema.Add("train", "steps", &o->steps, "steps to run").NonNegative();
  schema.Add("train", "lr", &o->lr, "learning rate").Positive();
  schema.Add("train", "momentum", &o->momentum, "momentum").InRange(0.0f, 1.0f);
  schema.AddChoice("train", "optimizer", &o->optimizer, {"sgd", "adam"}, "update rule");
  schema.Add("data", "shuffle", &o->shuffle, "shuffle the files");
  schema.Add("data", "name", &o->name, "run name").NonEmpty();
  schema.Add("data", "dims", &o->dims, "layer widths").NonEmpty();
  schema.Add("data", "files", &o->files, "input files");
}

std::vector<ConfigOverride> SplitOverrides(std::string_view rest) {
  std::vector<ConfigOverride> overrides;
  while (!rest.empty()) {
    const size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    const size_t eq = line.find('=');
    overrides.push_back({std::string(line.substr(0, eq)), eq == std::string_view::npos
                                                              ? std::string()
                                                              : std::string(line.substr(eq + 1))});
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  return overrides;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view text = input.substr(0, nul);
  const std::vector<ConfigOverride> overrides = nul == std::string_view::npos
                                                    ? std::vector<ConfigOverride>{}
                                                    : SplitOverrides(input.substr(nul + 1));
  try {
    (void)ScanIni(text, "fuzz.ini");
  } catch (const Error&) {
  }
  FuzzOptions options;
  ConfigSchema schema;
  Register(schema, &options);
  try {
    schema.ParseString(text, "fuzz.ini", overrides);
  } catch (const Error&) {
    return 0;
  }
  const std::string resolved = schema.ResolvedIni();
  FuzzOptions again_options;
  ConfigSchema again;
  Register(again, &again_options);
  try {
    again.ParseString(resolved, "resolved.ini");
  } catch (const Error&) {
    std::abort();  // an accepted config must write an INI that parses back
  }
  for (const std::string& key : schema.Keys()) {
    if (schema.ValueText(key) != again.ValueText(key)) std::abort();
  }
  return 0;
}
