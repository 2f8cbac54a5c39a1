#include "io/tensorboard/event_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iterator>

#include <Eigen/Core>

#include "core/error.hpp"
#include "io/tfrecord_reader.hpp"
#include "io/tfrecord_writer.hpp"
#include "tensorboard_event.pb.h"

namespace shardflow::io {
namespace {

namespace fs = std::filesystem;

constexpr char kFilePrefix[] = "events.out.tfevents.";
constexpr char kFileVersion[] = "brain.Event:2";  // what TensorFlow's writers put first

double WallTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// events.out.tfevents.<seconds>.<host>.<pid>, as TensorFlow names them (its newer writers add
// the pid and a counter too); a counter is appended if a file of that name exists already.
std::string NewEventFileName(const std::string& dir) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::string base = dir + "/" + kFilePrefix +
                           std::to_string(static_cast<int64_t>(WallTime())) + "." + host + "." +
                           std::to_string(getpid());
  std::string name = base;
  for (int n = 1; fs::exists(name); ++n) name = base + "." + std::to_string(n);
  return name;
}

void Fill(const Histogram& h, tb::HistogramProto* p) {
  p->set_min(h.min);
  p->set_max(h.max);
  p->set_num(h.num);
  p->set_sum(h.sum);
  p->set_sum_squares(h.sum_squares);
  for (double limit : h.limits) p->add_bucket_limit(limit);
  for (double count : h.counts) p->add_bucket(count);
}

}  // namespace

// Rank 0 computes these while the other ranks wait at the next all-reduce, so speed matters
// (an MLP's 535,818 weights and as many gradients every log.histogram_every steps): the
// reductions run through Eigen in float over blocks of 4096 values (vectorized) and are summed
// in double across blocks; the bucket pass multiplies by the inverse width. Non-finite values
// (rare: a diverging run) are copied out first.
Histogram MakeHistogram(const float* values, size_t count, int buckets) {
  using Values = Eigen::Map<const Eigen::ArrayXf>;
  Histogram h;
  std::vector<float> finite;
  const float* v = values;
  size_t n = count;
  if (count > 0 && !Values(values, static_cast<Eigen::Index>(count)).allFinite()) {
    std::copy_if(values, values + count, std::back_inserter(finite),
                 [](float x) { return std::isfinite(x); });
    h.nonfinite = static_cast<int64_t>(count - finite.size());
    v = finite.data();
    n = finite.size();
  }
  if (n == 0) return h;
  const Values all(v, static_cast<Eigen::Index>(n));
  h.min = all.minCoeff();
  h.max = all.maxCoeff();
  h.num = static_cast<double>(n);
  constexpr size_t kBlock = 4096;
  for (size_t begin = 0; begin < n; begin += kBlock) {
    const Values block(v + begin, static_cast<Eigen::Index>(std::min(kBlock, n - begin)));
    h.sum += static_cast<double>(block.sum());
    h.sum_squares += static_cast<double>(block.square().sum());
  }
  const int nb = h.max > h.min ? std::max(1, buckets) : 1;
  const double width = (h.max - h.min) / nb;
  h.limits.resize(static_cast<size_t>(nb));
  for (int b = 0; b + 1 < nb; ++b) h.limits[static_cast<size_t>(b)] = h.min + width * (b + 1);
  h.limits.back() = h.max;
  std::vector<int64_t> counts(static_cast<size_t>(nb), 0);
  const auto lo = static_cast<float>(h.min);
  const float scale = width > 0 ? static_cast<float>(1.0 / width) : 0.0f;
  for (size_t i = 0; i < n; ++i) {
    const int b = std::min(static_cast<int>((v[i] - lo) * scale), nb - 1);
    ++counts[static_cast<size_t>(b)];
  }
  h.counts.assign(counts.begin(), counts.end());
  return h;
}

EventWriter::EventWriter(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error(ErrorCode::kIo, "cannot create the TensorBoard folder: " + ec.message(),
                {.file = dir});
  }
  path_ = NewEventFileName(dir);
  file_ = std::make_unique<TFRecordWriter>(
      path_, TFRecordWriterOptions{.compression = Compression::kNone});
  tb::Event event;
  event.set_wall_time(WallTime());
  event.set_file_version(kFileVersion);
  WriteEvent(event.SerializeAsString());
  Flush();
}

EventWriter::~EventWriter() = default;

void EventWriter::AddScalars(int64_t step,
                             const std::vector<std::pair<std::string, double>>& scalars) {
  tb::Event event;
  event.set_wall_time(WallTime());
  event.set_step(step);
  for (const auto& [tag, value] : scalars) {
    tb::Summary::Value* v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  WriteEvent(event.SerializeAsString());
}

void EventWriter::AddHistogram(const std::string& tag, int64_t step, const float* values,
                               size_t count) {
  tb::Event event;
  event.set_wall_time(WallTime());
  event.set_step(step);
  tb::Summary::Value* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  Fill(MakeHistogram(values, count), v->mutable_histo());
  WriteEvent(event.SerializeAsString());
}

void EventWriter::WriteEvent(const std::string& serialized) { file_->Write(serialized); }

void EventWriter::Flush() { file_->Flush(); }

std::vector<std::string> EventFiles(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind(kFilePrefix, 0) == 0 &&
        name.find(".tmp") == std::string::npos) {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

namespace {

// Counts what the reader dropped (a damaged tail) so the file is rewritten without it.
class CountingReporter : public CorruptionReporter {
 public:
  void Corruption(uint64_t /*bytes*/, const Status& /*reason*/) override { ++dropped; }
  int64_t dropped = 0;
};

int64_t DropEventsAfterIn(const std::string& path, int64_t step) {
  CountingReporter damaged;
  std::vector<std::string> kept;
  int64_t dropped = 0;
  {
    TFRecordReader reader(
        path,
        {.compression = Compression::kNone, .on_corrupt = OnCorrupt::kSkip, .reporter = &damaged});
    TFRecordReader::Record record;
    tb::Event event;
    while (reader.Next(&record)) {
      if (!event.ParseFromArray(record.data.data(), static_cast<int>(record.data.size()))) {
        ++dropped;  // framed correctly but not an event: nothing TensorBoard could show
        continue;
      }
      if (event.what_case() != tb::Event::kFileVersion && event.step() > step) {
        ++dropped;
        continue;
      }
      kept.emplace_back(record.data);
    }
  }
  if (dropped == 0 && damaged.dropped == 0) return 0;
  const std::string tmp = path + ".tmp";
  {
    TFRecordWriter out(tmp, {.compression = Compression::kNone});
    for (const std::string& r : kept) out.Write(r);
    out.Close();
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec)
    throw Error(ErrorCode::kIo, "cannot replace events file: " + ec.message(), {.file = path});
  return dropped;
}

}  // namespace

int64_t DropEventsAfter(const std::string& dir, int64_t step) {
  int64_t dropped = 0;
  for (const std::string& path : EventFiles(dir)) dropped += DropEventsAfterIn(path, step);
  return dropped;
}

}  // namespace shardflow::io
