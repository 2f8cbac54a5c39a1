// Test helper: the TrainerOptions shardflow-train makes from INI text, as its main does
// (experiment config, the strategies' keys, MakeTrainerOptions), with a [data] files line added.
#pragma once

#include <string>

#include "apps/train/strategy_unit.hpp"
#include "apps/train/trainer_options.hpp"

namespace shardflow::train::testing {

// `name` stands for the file in messages; `table`, when given, gets the resolved table.
inline TrainerOptions OptionsFromConfig(const std::string& ini, const JobShape& job,
                                        const std::string& name, std::string* table = nullptr) {
  apps::ExperimentConfig config;
  ConfigSchema schema;
  apps::RegisterExperimentConfig(schema, &config);
  DisownTrainerSetKeys(schema);
  const StrategySchema strategies = DescribeStrategies(schema);
  schema.ParseString("[data]\nfiles = x.tfrecord\n" + ini, name);
  TrainerOptions o = MakeTrainerOptions(config, schema, strategies, job, schema.ResolvedIni());
  if (table != nullptr) *table = schema.ResolvedTable();
  return o;
}

}  // namespace shardflow::train::testing
