#include "io/tensorboard/event_writer.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "io/tfrecord_reader.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::io {
namespace event_writer_test {

int64_t CountRecords(const std::string& path) {
  TFRecordReader reader(path, {.compression = Compression::kNone});
  TFRecordReader::Record record;
  int64_t n = 0;
  while (reader.Next(&record)) ++n;
  return n;
}

TEST(HistogramTest, BucketsCoverTheFiniteValues) {
  const std::vector<float> v = {-1.0f, 0.0f, 0.5f,
                                1.0f,  3.0f, std::numeric_limits<float>::quiet_NaN()};
  const Histogram h = MakeHistogram(v.data(), v.size(), 4);
  EXPECT_EQ(h.nonfinite, 1);
  EXPECT_DOUBLE_EQ(h.num, 5);
  EXPECT_DOUBLE_EQ(h.min, -1);
  EXPECT_DOUBLE_EQ(h.max, 3);
  EXPECT_DOUBLE_EQ(h.sum, 3.5);
  EXPECT_DOUBLE_EQ(h.sum_squares, 1 + 0.25 + 1 + 9);
  ASSERT_EQ(h.limits.size(), 4u);
  EXPECT_DOUBLE_EQ(h.limits[0], 0.0);
  EXPECT_DOUBLE_EQ(h.limits[3], 3.0);
  // [-1,0) holds -1; [0,1) holds 0 and 0.5; [1,2) holds 1; [2,3] holds 3.
  EXPECT_EQ(h.counts, (std::vector<double>{1, 2, 1, 1}));
}

TEST(HistogramTest, EqualOrNoValues) {
  const std::vector<float> same(7, 2.5f);
  const Histogram h = MakeHistogram(same.data(), same.size());
  EXPECT_EQ(h.counts, (std::vector<double>{7}));
  EXPECT_EQ(MakeHistogram(nullptr, 0).counts.size(), 0u);
}

TEST(EventWriterTest, ResumeDropsTheStepsPastIt) {
  testing::ScratchDir dir("event_writer_drop");
  std::string path;
  {
    EventWriter w((dir / "train").string());
    path = w.path();
    for (int64_t step = 1; step <= 5; ++step) w.AddScalars(step, {{"loss", 1.0 / step}});
    const float values[3] = {1, 2, 3};
    w.AddHistogram("weights/w", 4, values, 3);
    w.Flush();
  }
  EXPECT_EQ(EventFiles((dir / "train").string()), std::vector<std::string>{path});
  EXPECT_EQ(CountRecords(path), 7);  // file_version, 5 scalars, 1 histogram
  EXPECT_EQ(DropEventsAfter((dir / "train").string(), 3), 3);
  EXPECT_EQ(CountRecords(path), 4);
  EXPECT_EQ(DropEventsAfter((dir / "train").string(), 3), 0);
  EXPECT_EQ(DropEventsAfter((dir / "missing").string(), 3), 0);
  // A damaged tail (a run killed mid-record) goes too; the file then reads cleanly.
  std::ofstream(path, std::ios::app | std::ios::binary) << "\x10\x00\x00";
  EXPECT_THROW(CountRecords(path), Error);
  EXPECT_EQ(DropEventsAfter((dir / "train").string(), 100), 0);
  EXPECT_EQ(CountRecords(path), 4);
  // A second writer in the same folder opens a file of its own.
  EventWriter again((dir / "train").string());
  EXPECT_NE(again.path(), path);
  EXPECT_EQ(EventFiles((dir / "train").string()).size(), 2u);
}

}  // namespace event_writer_test
}  // namespace shardflow::io
