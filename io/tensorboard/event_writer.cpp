#include "io/tensorboard/event_writer.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

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

Histogram MakeHistogram(const float* values, size_t count, int buckets) {
  Histogram h;
  h.min = INFINITY;
  h.max = -INFINITY;
  for (size_t i = 0; i < count; ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) {
      ++h.nonfinite;
      continue;
    }
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  if (h.num == 0) {
    h.min = h.max = 0;
    return h;
  }
  const int n = h.max > h.min ? std::max(1, buckets) : 1;
  const double width = (h.max - h.min) / n;
  h.limits.resize(static_cast<size_t>(n));
  h.counts.assign(static_cast<size_t>(n), 0.0);
  for (int b = 0; b + 1 < n; ++b) h.limits[static_cast<size_t>(b)] = h.min + width * (b + 1);
  h.limits.back() = h.max;
  for (size_t i = 0; i < count; ++i) {
    const double v = values[i];
    if (!std::isfinite(v)) continue;
    const int b = width > 0 ? std::min(n - 1, static_cast<int>((v - h.min) / width)) : 0;
    h.counts[static_cast<size_t>(b)] += 1;
  }
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
