// TensorBoard event files: scalars and histograms written as TensorFlow `Event` protos
// (io/proto/tensorboard_event.proto) in TFRecord framing (io/tfrecord_writer.hpp), so that
// `tensorboard --logdir DIR` shows them.
//
//   EventWriter train("run/tb/train");            // events.out.tfevents.<s>.<host>.<pid>
//   train.AddScalars(100, {{"loss", 0.41}, {"learning_rate", 1e-3}});
//   train.AddHistogram("weights/03_dense/kernel", 100, values.data(), values.size());
//   train.Flush();                                  // TensorBoard sees what was flushed
//
// One writer is one events file; the first record is the file_version event ("brain.Event:2").
// A resumed run calls DropEventsAfter(dir, step) before opening its writer: the steps past the
// checkpoint, which the resumed run redoes, are removed from the earlier files, so no step is
// logged twice.
// Errors: Error(kIo) naming the file. Thread-safety: an EventWriter is used by one thread at a
// time; the free functions are safe on distinct directories.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace shardflow::io {

class TFRecordWriter;

// The contents of a TensorBoard histogram (tensorflow.HistogramProto): `counts[i]` values lie
// in [limits[i-1], limits[i]) (the first bucket from -infinity, the last up to and including
// max). Non-finite values are left out (and counted in `nonfinite`).
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> limits;
  std::vector<double> counts;
  int64_t nonfinite = 0;
};

// `buckets` equal-width buckets over [min, max] of the finite values (one bucket when they are
// all equal; none when there are none).
Histogram MakeHistogram(const float* values, size_t count, int buckets = 30);

class EventWriter {
 public:
  // Creates `dir` (and its parents) and a new events file in it. Throws Error(kIo).
  explicit EventWriter(const std::string& dir);
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  // One event holding a simple_value per tag at `step`.
  void AddScalars(int64_t step, const std::vector<std::pair<std::string, double>>& scalars);
  // One event holding the histogram of `values` under `tag` at `step`.
  void AddHistogram(const std::string& tag, int64_t step, const float* values, size_t count);
  void Flush();
  const std::string& path() const { return path_; }

 private:
  void WriteEvent(const std::string& serialized);

  std::string path_;
  std::unique_ptr<TFRecordWriter> file_;
};

// Rewrites every events file in `dir` without the events of steps past `step` (the file_version
// records stay), and without a damaged tail (a run killed mid-write). Returns the number of
// events dropped; a missing `dir` drops none. Throws Error(kIo).
int64_t DropEventsAfter(const std::string& dir, int64_t step);

// The events files of `dir` ("events.out.tfevents.*"), sorted by name.
std::vector<std::string> EventFiles(const std::string& dir);

}  // namespace shardflow::io
