// Shuffle: permutation, naive twin, reshuffling, bounds (elements, bytes, peak RSS), fused
// shuffle-and-repeat.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "io/pipeline/counter_rng.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace pipeline_shuffle_test {

using testing::Drain;
using testing::Range;
using testing::Xs;

// The naive twin of shuffle.cpp: the same window algorithm on plain indices.
std::vector<int64_t> NaiveShuffle(int64_t n, int64_t buffer, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> window, out;
  int64_t next = 0;
  while (next < n && static_cast<int64_t>(window.size()) < buffer) window.push_back(next++);
  int64_t draw = 0;
  while (!window.empty()) {
    CounterRng rng(seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(draw++), 0x53485546);
    const size_t j = rng.UniformInt(window.size());
    out.push_back(window[j]);
    if (next < n) {
      window[j] = next++;
    } else {
      window[j] = window.back();
      window.pop_back();
    }
  }
  return out;
}

TEST(PipelineShuffle, MatchesNaiveTwinAndIsAPermutation) {
  for (int64_t n : {0, 1, 7, 100, 1001}) {
    for (int64_t buffer : {1, 2, 10, 5000}) {
      auto got = Xs(Drain(Range(n).Shuffle({.buffer_elements = buffer, .seed = 42})));
      EXPECT_EQ(got, NaiveShuffle(n, buffer, 42, 0)) << n << " " << buffer;
      std::sort(got.begin(), got.end());
      std::vector<int64_t> all(n);
      for (int64_t i = 0; i < n; ++i) all[i] = i;
      EXPECT_EQ(got, all);
    }
  }
  // Buffer 1 is the identity; a full buffer moves most elements.
  auto identity = Xs(Drain(Range(50).Shuffle({.buffer_elements = 1})));
  EXPECT_TRUE(std::is_sorted(identity.begin(), identity.end()));
  auto full = Xs(Drain(Range(50).Shuffle({.buffer_elements = 50, .seed = 1})));
  int in_place = 0;
  for (int64_t i = 0; i < 50; ++i) in_place += full[i] == i;
  EXPECT_LT(in_place, 10);
}

TEST(PipelineShuffle, ReshufflesEachEpochUnlessFixed) {
  auto two = Xs(Drain(Range(100).Shuffle({.buffer_elements = 100, .seed = 3}).Repeat(2)));
  std::vector<int64_t> a(two.begin(), two.begin() + 100), b(two.begin() + 100, two.end());
  EXPECT_NE(a, b);
  EXPECT_EQ(b, NaiveShuffle(100, 100, 3, 1));
  auto fixed =
      Xs(Drain(Range(100)
                   .Shuffle({.buffer_elements = 100, .seed = 3, .reshuffle_each_iteration = false})
                   .Repeat(2)));
  EXPECT_TRUE(std::equal(fixed.begin(), fixed.begin() + 100, fixed.begin() + 100));
  EXPECT_NE(Xs(Drain(Range(100).Shuffle({.buffer_elements = 100, .seed = 4}))), a);
}

TEST(PipelineShuffle, BoundedByBytes) {
  // Elements of 1 KiB; a 10 KiB byte bound keeps at most ~10 buffered despite 1000 slots.
  auto ds = Range(200)
                .Map([](Element& e, const MapContext&) {
                  e.Set("payload", Tensor(DType::kUInt8, {1024}));
                })
                .Shuffle({.buffer_elements = 1000, .buffer_bytes = 10 * 1040, .seed = 9});
  PipelineIterator it = ds.MakeIterator();
  Element e;
  int64_t n = 0;
  while (it.Next(&e)) ++n;
  EXPECT_EQ(n, 200);
  for (const auto& s : it.stats().Snapshot()) {
    if (s.name.rfind("shuffle", 0) == 0) {
      EXPECT_LE(s.peak_buffered_bytes, 11 * 1040 + 1040) << s.name;
      EXPECT_GT(s.peak_buffered_bytes, 5 * 1040);
    }
  }
  EXPECT_THROW(Range(3).Shuffle({.buffer_elements = 0}), Error);
}

TEST(PipelineShuffle, FusedShuffleAndRepeatSeesEveryElementEachPass) {
  for (int64_t count : {2, 3}) {
    auto out = Xs(Drain(Range(97).ShuffleAndRepeat({.buffer_elements = 20, .seed = 5}, count)));
    ASSERT_EQ(static_cast<int64_t>(out.size()), 97 * count);
    std::map<int64_t, int> seen;
    for (int64_t x : out) seen[x]++;
    EXPECT_EQ(seen.size(), 97u);
    for (const auto& [x, c] : seen) EXPECT_EQ(c, count) << x;
    // Elements of the next pass enter while the current one drains (mixing at the boundary).
    bool crossed = false;
    std::map<int64_t, int> first_pass;
    for (int64_t i = 0; i < 97; ++i) crossed = crossed || first_pass[out[i]]++ > 0;
    EXPECT_TRUE(crossed);
  }
  EXPECT_EQ(Drain(Range(10).ShuffleAndRepeat({.buffer_elements = 4}, -1).Take(35)).size(), 35u);
  EXPECT_TRUE(Drain(Range(0).ShuffleAndRepeat({.buffer_elements = 4}, -1)).empty());
}

[[maybe_unused]] int64_t StatusKb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field)));
  }
  return -1;
}

// AddressSanitizer and ThreadSanitizer both add shadow memory to every allocation.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SHARDFLOW_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SHARDFLOW_UNDER_SANITIZER 1
#endif
#endif

TEST(PipelineShuffle, PeakRssWithinOneAndAHalfTimesThePayload) {
#ifdef SHARDFLOW_UNDER_SANITIZER
  GTEST_SKIP() << "RSS is not meaningful under AddressSanitizer or ThreadSanitizer";
#else
  // Runs in a forked child so the measurement is this pipeline's alone: the child resets its
  // peak RSS (clear_refs 5), shuffles 20000 elements of 3 KB through a 10000-element buffer
  // (payload 30 MB) and reports the peak growth over its starting RSS.
  constexpr int64_t kElements = 10000, kBytes = 3072;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    auto ds = Range(2 * kElements)
                  .Map([](Element& e, const MapContext&) {
                    Tensor t(DType::kUInt8, {kBytes});
                    std::memset(t.raw_data(), static_cast<int>(e.id & 0xff), kBytes);
                    e.Set("payload", t);
                  })
                  .Shuffle({.buffer_elements = kElements, .seed = 1});
    PipelineIterator it = ds.MakeIterator({.autotune = false});
    { std::ofstream("/proc/self/clear_refs") << "5"; }
    const int64_t base_kb = StatusKb("VmRSS:");
    Element e;
    int64_t n = 0;
    while (it.Next(&e)) ++n;
    const int64_t peak_kb = StatusKb("VmHWM:");
    const int64_t result[2] = {n == 2 * kElements ? (peak_kb - base_kb) * 1024 : -1, base_kb};
    if (write(fds[1], result, sizeof(result)) != sizeof(result)) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  int64_t result[2] = {0, 0};
  const ssize_t got = read(fds[0], result, sizeof(result));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof(result)));
  ASSERT_GE(result[0], 0) << "child did not see every element";
  const double payload = static_cast<double>(kElements * kBytes);
  EXPECT_LE(result[0], 1.5 * payload) << "peak growth " << result[0] / 1e6 << " MB for "
                                      << payload / 1e6 << " MB of buffered payload";
  EXPECT_GE(result[0], 0.8 * payload) << "the buffer did not fill?";
#endif
}

}  // namespace pipeline_shuffle_test
}  // namespace shardflow::pipeline
