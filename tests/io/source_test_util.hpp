// Helpers for the source tests (text, fixed-length, JSON lines, image folders): writing files,
// feature text, and the exactly-once check over simulated ranks.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "io/pipeline/dataset.hpp"
#include "io/pipeline/shard_policy.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline::testing {

inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  out.close();
  ASSERT_TRUE(out.good()) << path;
}

inline std::string FeatureText(const Element& e, const std::string& name) {
  const Tensor& t = e.Get(name);
  return std::string(static_cast<const char*>(t.raw_data()), t.byte_size());
}

// Reads `source` on `ranks` simulated ranks under `policy` and returns key(e) of every element
// of every rank, checking ids are unique across ranks.
inline std::multiset<std::string> ReadAllRanks(
    std::shared_ptr<const RecordSource> source, ShardPolicy policy, int ranks,
    const std::function<std::string(const Element&)>& key, const InterleaveOptions& reads = {}) {
  std::multiset<std::string> seen;
  std::set<int64_t> ids;
  for (int rank = 0; rank < ranks; ++rank) {
    ShardPlan plan = PlanShards(source->Files(), source->SupportsByteRanges(), policy, ranks, rank);
    for (const auto& e : Drain(Dataset::FromRecordSource(source, plan, reads))) {
      seen.insert(key(e));
      EXPECT_TRUE(ids.insert(e.id).second) << "duplicate id " << e.id;
    }
  }
  return seen;
}

// The error `fn` throws (fails the test when none).
template <typename Fn>
std::string ErrorText(Fn fn, ErrorCode* code = nullptr) {
  try {
    fn();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  ADD_FAILURE() << "expected an Error";
  return "";
}

inline void ExpectHas(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

}  // namespace shardflow::pipeline::testing
