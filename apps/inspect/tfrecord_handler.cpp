// shardflow-inspect for TFRecord files of tf.train.Examples (plain, .gz, .zlib).
#include <ostream>

#include "apps/inspect/format_handler.hpp"
#include "apps/inspect/json_text.hpp"
#include "io/example.hpp"
#include "io/tfrecord_format.hpp"
#include "io/tfrecord_reader.hpp"

namespace shardflow::inspect {
namespace {

using io::ExampleView;
using io::FeatureKind;
using io::FeatureView;
using io::TFRecordReader;

// Calls fn(record, view) for every record; throws Error on damage.
template <typename Fn>
void ForEachExample(const std::string& path, Fn&& fn) {
  TFRecordReader reader(path);
  TFRecordReader::Record rec;
  ExampleView view;
  while (reader.Next(&rec)) {
    const io::RecordLocation where{path, rec.offset + io::tfrecord::kHeaderSize, rec.index};
    ThrowIfError(io::ParseExample(rec.data, &view, &where));
    fn(rec, view);
  }
}

class TFRecordHandler final : public FormatHandler {
 public:
  const char* name() const override { return "tfrecord"; }

  // TFRecord has no magic number: it is the fallback for every file no other handler claims.
  bool Handles(const std::string&) const override { return true; }

  VerifyReport Verify(const std::string& path) const override {
    VerifyReport report;
    try {
      ForEachExample(path, [&](const TFRecordReader::Record& rec, const ExampleView&) {
        ++report.records;
        report.bytes = rec.offset + io::tfrecord::kFramingSize + rec.data.size();
      });
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kDataLoss) throw;
      report.loss = e.status();
    }
    return report;
  }

  void Cat(const std::string& path, std::ostream& out) const override {
    std::string line;
    ForEachExample(path, [&](const TFRecordReader::Record& rec, const ExampleView& view) {
      line = "{\"file\": " + JsonString(path) + ", \"record\": " + std::to_string(rec.index) +
             ", \"offset\": " + std::to_string(rec.offset) + ", \"features\": {";
      bool first = true;
      for (const FeatureView& f : view.features()) {
        if (!first) line += ", ";
        first = false;
        line += JsonString(f.name) + ": ";
        AppendValues(f, &line);
      }
      line += "}}\n";
      out << line;
    });
  }

  void Stats(const std::string& path, StatsTotals* totals) const override {
    ++totals->files;
    std::vector<int64_t> ints;
    std::vector<float> floats;
    ForEachExample(path, [&](const TFRecordReader::Record&, const ExampleView& view) {
      ++totals->records;
      for (const FeatureView& f : view.features()) {
        FeatureTotals& t = totals->features[{std::string(f.name), io::FeatureKindName(f.kind)}];
        ++t.examples;
        t.values += f.num_values;
        if (f.kind == FeatureKind::kInt64) {
          ints.resize(static_cast<size_t>(f.num_values));
          f.CopyInt64s(ints.data());
          for (int64_t v : ints) t.int_sum += v;
        } else if (f.kind == FeatureKind::kFloat) {
          floats.resize(static_cast<size_t>(f.num_values));
          f.CopyFloats(floats.data());
          for (float v : floats) t.float_sum += static_cast<double>(v);
        } else if (f.kind == FeatureKind::kBytes) {
          f.ForEachBytes([&](std::string_view b) {
            t.byte_length += b.size();
            for (unsigned char c : b) t.byte_sum += c;
          });
        }
      }
    });
  }

 private:
  static void AppendValues(const FeatureView& f, std::string* line) {
    switch (f.kind) {
      case FeatureKind::kInt64: {
        std::vector<int64_t> v(static_cast<size_t>(f.num_values));
        f.CopyInt64s(v.data());
        *line += "{\"int64\": [";
        for (size_t i = 0; i < v.size(); ++i) *line += (i ? ", " : "") + std::to_string(v[i]);
        *line += "]}";
        break;
      }
      case FeatureKind::kFloat: {
        std::vector<float> v(static_cast<size_t>(f.num_values));
        f.CopyFloats(v.data());
        *line += "{\"float\": [";
        for (size_t i = 0; i < v.size(); ++i) *line += (i ? ", " : "") + JsonFloat32(v[i]);
        *line += "]}";
        break;
      }
      case FeatureKind::kBytes: {
        *line += "{\"bytes\": [";
        bool first = true;
        f.ForEachBytes([&](std::string_view b) {
          *line += (first ? "\"" : ", \"") + Base64(b) + "\"";
          first = false;
        });
        *line += "]}";
        break;
      }
      case FeatureKind::kNone:
        *line += "{}";
        break;
    }
  }
};

}  // namespace

std::unique_ptr<FormatHandler> MakeTFRecordHandler() { return std::make_unique<TFRecordHandler>(); }

}  // namespace shardflow::inspect
