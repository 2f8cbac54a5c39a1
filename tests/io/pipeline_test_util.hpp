// Helpers shared by the pipeline tests: synthetic sources, draining, and a hang watchdog.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "io/pipeline/dataset.hpp"
#include "io/pipeline/memory_source.hpp"

namespace shardflow::pipeline::testing {

// Runs fn on another thread; if it has not finished in `seconds`, names the test and aborts
// the process (a hung pipeline must fail the test, not the CI job's timeout).
template <typename Fn>
void WithinSeconds(double seconds, const char* what, Fn fn) {
  auto done = std::async(std::launch::async, fn);
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "HANG: '%s' did not finish within %.0f s\n", what, seconds);
    std::abort();
  }
  done.get();  // rethrows assertion exceptions / errors
}

// A column "x" of int64 values 0..n-1 and "y" = float 2x, as in-memory tensor rows.
inline Dataset Range(int64_t n) {
  Tensor x(DType::kInt64, {n});
  Tensor y(DType::kFloat32, {n, 2});
  for (int64_t i = 0; i < n; ++i) {
    x.data<int64_t>()[i] = i;
    y.data<float>()[2 * i] = 2.0f * i;
    y.data<float>()[2 * i + 1] = -1.0f * i;
  }
  return Dataset::FromTensors({{"x", x}, {"y", y}});
}

inline int64_t X(const Element& e) { return *e.Get("x").data<int64_t>(); }

// Every element of one pass.
inline std::vector<Element> Drain(const Dataset& ds, IteratorOptions options = {}) {
  PipelineIterator it = ds.MakeIterator(options);
  std::vector<Element> out;
  Element e;
  while (it.Next(&e)) out.push_back(e);
  return out;
}

inline std::vector<int64_t> Ids(const std::vector<Element>& elements) {
  std::vector<int64_t> ids;
  for (const auto& e : elements) ids.push_back(e.id);
  return ids;
}

inline std::vector<int64_t> Xs(const std::vector<Element>& elements) {
  std::vector<int64_t> xs;
  for (const auto& e : elements) xs.push_back(X(e));
  return xs;
}

// `total` records spread over `files` in-memory files of uneven sizes (file f gets a share
// proportional to f+1, remainders to the last); record r of file f is "f:r" padded to vary
// record sizes.
inline std::shared_ptr<InMemoryRecordSource> UnevenFiles(int64_t total, int files) {
  std::vector<std::pair<std::string, std::vector<std::string>>> data;
  int64_t weight_sum = static_cast<int64_t>(files) * (files + 1) / 2;
  int64_t assigned = 0;
  for (int f = 0; f < files; ++f) {
    int64_t n = (f + 1 == files) ? total - assigned : total * (f + 1) / weight_sum;
    assigned += n;
    std::vector<std::string> records;
    for (int64_t r = 0; r < n; ++r) {
      records.push_back(std::to_string(f) + ":" + std::to_string(r) +
                        std::string(static_cast<size_t>((r * 7) % 13), '.'));
    }
    data.emplace_back("mem/file" + std::to_string(f) + ".rec", std::move(records));
  }
  return std::make_shared<InMemoryRecordSource>(std::move(data));
}

inline std::string RecordText(const Element& e) {
  const Tensor& t = e.Get("bytes");
  return std::string(static_cast<const char*>(t.raw_data()), t.byte_size());
}

}  // namespace shardflow::pipeline::testing
