#include "io/pipeline/feature_spec.hpp"

#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/ops/jpeg_window.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <unordered_map>

namespace shardflow::pipeline {
namespace {

std::vector<std::string> Split(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

[[noreturn]] void Bad(const std::string& key, const std::string& text, const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument, "bad feature spec '" + text + "': " + why,
              {.key = key,
               .hint = "expected name:kind:dtype:shape[:default], e.g. "
                       "image_raw:bytes:uint8:28x28x1 or label:int64:int64:scalar"});
}

bool IsKind(const std::string& s) {
  return s == "bytes" || s == "int64" || s == "float" || s == "image";
}

io::FeatureKind KindOf(const std::string& s) {
  if (s == "bytes" || s == "image") return io::FeatureKind::kBytes;
  if (s == "int64") return io::FeatureKind::kInt64;
  return io::FeatureKind::kFloat;
}

// kAnySize ("*") is taken where `any_size` (an image's height and width).
Shape ParseShape(const std::string& s, const std::string& key, const std::string& text,
                 bool any_size = false) {
  if (s.empty() || s == "scalar") return {};
  Shape shape;
  for (const auto& d : Split(s, 'x')) {
    if (d == "*") {
      if (!any_size)
        Bad(key, text,
            "'*' (any size) is for an image's height and width, or a whole bytes:uint8 feature");
      shape.push_back(io::kAnySize);
      continue;
    }
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(d, &used);
    } catch (...) {
      used = 0;
    }
    if (used == 0 || used != d.size() || v < 1) Bad(key, text, "bad dimension '" + d + "'");
    shape.push_back(v);
  }
  return shape;
}

DType DTypeFor(const std::string& s, const std::string& key, const std::string& text) {
  try {
    return ParseDType(s);
  } catch (const Error&) {
    Bad(key, text, "unknown dtype '" + s + "' (uint8, int32, int64, float32, float64)");
  }
}

}  // namespace

bool IsAnyLengthBytes(const io::FeatureSpec& spec) {
  return spec.kind == io::FeatureKind::kBytes && spec.dtype == DType::kUInt8 &&
         spec.shape == Shape{io::kAnySize};
}

namespace {

// An image feature's bytes decoded to the spec's shape; with keep_jpeg a JPEG stays encoded
// (uint8 [n]) once its header's size matches the spec.
Tensor DecodeImageFeature(const io::FeatureSpec& spec, std::string_view bytes, bool keep_jpeg,
                          const ErrorContext& ctx) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const bool jpeg = bytes.size() >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
  Tensor image;
  Shape shape;
  try {
    if (keep_jpeg && jpeg) {
      const JpegHeader header = ReadJpegHeader(data, bytes.size());
      shape = {header.height, header.width, spec.shape[2]};
      image = Tensor(DType::kUInt8, {static_cast<int64_t>(bytes.size())});
      std::memcpy(image.raw_data(), data, bytes.size());
    } else {
      image = DecodeImageBytes(data, bytes.size(), static_cast<int>(spec.shape[2]));
      shape = image.shape();
    }
  } catch (const Error& err) {
    throw Error(err.code(), std::string("image feature '") + spec.name + "': " + err.what(), ctx);
  }
  if (!io::ShapeMatches(shape, spec.shape)) {
    throw Error(ErrorCode::kInvalidArgument,
                "image feature '" + spec.name + "' decoded to " + ShapeToString(shape) +
                    ", not the schema's " + io::SpecShapeText(spec.shape),
                ctx);
  }
  return image;
}

}  // namespace

io::FeatureSpec ParseFeatureSpec(const std::string& raw, const std::string& key) {
  const std::string text = Trim(raw);
  std::vector<std::string> f = Split(text, ':');
  for (auto& s : f) s = Trim(s);
  if (f.empty() || f[0].empty()) Bad(key, text, "empty feature name");
  io::FeatureSpec spec;
  spec.name = f[0];
  if (f.size() >= 4 && IsKind(f[1])) {  // name:kind:dtype:shape[:default]
    if (f.size() > 5) Bad(key, text, "too many fields");
    spec.kind = KindOf(f[1]);
    spec.dtype = DTypeFor(f[2], key, text);
    // A bytes feature of any length ("*"): one value kept as its bytes, uint8 [n] (a document).
    const bool any_bytes = f[1] == "bytes" && f[2] == "uint8" && f[3] == "*";
    spec.shape = ParseShape(f[3], key, text, f[1] == "image" || any_bytes);
    if (f[1] == "image" && (spec.dtype != DType::kUInt8 || spec.shape.size() != 3 ||
                            (spec.shape[2] != 1 && spec.shape[2] != 3) || f.size() == 5)) {
      Bad(key, text,
          "an image feature is uint8 HxWxC with C 1 or 3 (H and W may be '*'), without default");
    }
    if (f.size() == 5) {
      try {
        size_t used = 0;
        spec.default_value = {std::stod(f[4], &used)};
        if (used != f[4].size()) throw 0;
      } catch (...) {
        Bad(key, text, "bad default '" + f[4] + "'");
      }
    }
  } else if (f.size() == 3 && (f[1] == "int64" || f[1] == "float") &&
             f[2].find_first_not_of("0123456789x") == std::string::npos) {
    // name:kind:shape (label:int64:1): kind's natural dtype.
    spec.kind = KindOf(f[1]);
    spec.dtype = f[1] == "int64" ? DType::kInt64 : DType::kFloat32;
    spec.shape = ParseShape(f[2], key, text);
  } else if (f.size() == 3 || f.size() == 2) {  // tensor formats: name:dtype[:shape]
    spec.kind = io::FeatureKind::kNone;
    spec.dtype = DTypeFor(f[1], key, text);
    spec.shape = f.size() == 3 ? ParseShape(f[2], key, text) : Shape{};
  } else {
    Bad(key, text, "expected 3 to 5 ':'-separated fields");
  }
  return spec;
}

io::Schema ParseFeatureSpecs(const std::vector<std::string>& texts, const std::string& key) {
  io::Schema schema;
  for (const auto& t : texts) {
    io::FeatureSpec spec = ParseFeatureSpec(t, key);
    for (const auto& other : schema.features) {
      if (other.name == spec.name) Bad(key, t, "feature '" + spec.name + "' given twice");
    }
    schema.features.push_back(std::move(spec));
  }
  return schema;
}

std::vector<std::string> ImageFeatureNames(const std::vector<std::string>& texts) {
  std::vector<std::string> names;
  for (const auto& t : texts) {
    std::vector<std::string> f = Split(t, ':');
    if (f.size() >= 2 && Trim(f[1]) == "image") names.push_back(Trim(f[0]));
  }
  return names;
}

std::vector<std::string> FloatFeatureNames(const std::vector<std::string>& texts) {
  std::vector<std::string> names;
  for (const auto& t : texts) {
    std::vector<std::string> f = Split(t, ':');
    if (f.size() >= 2 && Trim(f[1]) == "float") names.push_back(Trim(f[0]));
  }
  return names;
}

MapFn MakeExampleDecoder(io::Schema all, std::vector<std::string> image_features,
                         std::string record_feature, uint64_t header_bytes,
                         std::vector<std::string> encoded_jpeg) {
  // Image features are decoded from an ExampleView; the rest go through the batch parser.
  io::Schema schema;
  std::vector<io::FeatureSpec> images;
  for (auto& spec : all.features) {
    const bool image =
        std::find(image_features.begin(), image_features.end(), spec.name) != image_features.end();
    (image || IsAnyLengthBytes(spec) ? images : schema.features).push_back(spec);
  }
  std::vector<std::string> order;  // output order: the schema's
  for (const auto& spec : all.features) order.push_back(spec.name);
  for (const auto& spec : schema.features) {
    if (spec.kind == io::FeatureKind::kNone) {
      throw Error(ErrorCode::kInvalidArgument,
                  "feature '" + spec.name +
                      "' has no Example kind (bytes, int64 or float): needed for tfrecord",
                  {.key = "features"});
    }
    if (spec.var_len) {
      throw Error(ErrorCode::kInvalidArgument,
                  "variable-length feature '" + spec.name + "' cannot be batched densely",
                  {.key = "features"});
    }
  }
  // Validates the schema once, up front (the constructor throws naming the feature).
  io::ExampleBatchParser check(schema);
  static std::atomic<uint64_t> next_id{1};
  const uint64_t id = next_id.fetch_add(1);
  auto shared = std::make_shared<const io::Schema>(std::move(schema));
  auto image_specs = std::make_shared<const std::vector<io::FeatureSpec>>(std::move(images));
  auto order_ptr = std::make_shared<const std::vector<std::string>>(std::move(order));
  auto encoded = std::make_shared<const std::vector<std::string>>(std::move(encoded_jpeg));
  return [shared, image_specs, order_ptr, encoded, id, record_feature, header_bytes](
             Element& e, const MapContext&) {
    // One parser per (thread, decoder): the parser keeps scratch buffers between examples.
    thread_local std::unordered_map<uint64_t, std::unique_ptr<io::ExampleBatchParser>> parsers;
    auto& parser = parsers[id];
    if (!parser) parser = std::make_unique<io::ExampleBatchParser>(*shared);
    const Tensor& record = e.Get(record_feature);
    // A view of the element's shared file name: no string copy per record.
    const std::string_view file =
        e.where.file ? std::string_view(*e.where.file) : std::string_view();
    io::SerializedExample ex{
        .data = std::string_view(static_cast<const char*>(record.raw_data()), record.byte_size()),
        .where = {
            .file = file, .data_offset = e.where.offset + header_bytes, .record = e.where.record}};
    std::vector<std::pair<std::string, Tensor>> out;
    if (!shared->features.empty()) {
      parser->Begin(1);
      parser->ParseInto(ex, 0);
      io::ParsedBatch parsed = parser->Finish();
      for (size_t i = 0; i < parsed.names.size(); ++i) {
        out.emplace_back(parsed.names[i], parsed.values[i].Reshaped(shared->features[i].shape));
      }
    }
    if (!image_specs->empty()) {
      thread_local io::ExampleView view;
      const Status st = io::ParseExample(ex.data, &view, &ex.where);
      if (!st.ok()) throw Error(st);
      for (const auto& spec : *image_specs) {
        ErrorContext ctx = e.where.Context();
        ctx.key = spec.name;
        const io::FeatureView* f = view.Find(spec.name);
        const char* what = IsAnyLengthBytes(spec) ? "bytes feature '" : "image feature '";
        if (f == nullptr || f->kind != io::FeatureKind::kBytes || f->num_values != 1) {
          throw Error(ErrorCode::kInvalidArgument,
                      what + spec.name + "' must be a bytes list of one value", ctx);
        }
        std::string_view bytes;
        f->ForEachBytes([&](std::string_view v) { bytes = v; });
        if (IsAnyLengthBytes(spec)) {
          Tensor raw(DType::kUInt8, {static_cast<int64_t>(bytes.size())});
          if (!bytes.empty()) std::memcpy(raw.raw_data(), bytes.data(), bytes.size());
          out.emplace_back(spec.name, std::move(raw));
          continue;
        }
        const bool keep = std::find(encoded->begin(), encoded->end(), spec.name) != encoded->end();
        Tensor image = DecodeImageFeature(spec, bytes, keep, ctx);
        out.emplace_back(spec.name, std::move(image));
      }
      // Back to schema order.
      std::vector<std::pair<std::string, Tensor>> ordered;
      for (const auto& name : *order_ptr) {
        for (auto& kv : out) {
          if (kv.first == name) ordered.push_back(std::move(kv));
        }
      }
      out = std::move(ordered);
    }
    e.features = std::move(out);
  };
}

MapFn MakeTensorSelector(io::Schema schema) {
  auto shared = std::make_shared<const io::Schema>(std::move(schema));
  return [shared](Element& e, const MapContext&) {
    std::vector<std::pair<std::string, Tensor>> out;
    for (const auto& spec : shared->features) {
      if (!e.Has(spec.name)) {
        ErrorContext ctx = e.where.Context();
        ctx.key = spec.name;
        throw Error(ErrorCode::kInvalidArgument,
                    "feature '" + spec.name + "' is not in the record (schema mismatch)", ctx);
      }
      const Tensor& t = e.Get(spec.name);
      if (t.dtype() != spec.dtype || t.num_elements() != NumElements(spec.shape)) {
        ErrorContext ctx = e.where.Context();
        ctx.key = spec.name;
        throw Error(ErrorCode::kInvalidArgument,
                    "feature '" + spec.name + "' is " + DTypeName(t.dtype()) + " with " +
                        std::to_string(t.num_elements()) + " values, the schema wants " +
                        DTypeName(spec.dtype) + " with " + std::to_string(NumElements(spec.shape)),
                    ctx);
      }
      out.emplace_back(spec.name, t.Reshaped(spec.shape));
    }
    e.features = std::move(out);
  };
}

}  // namespace shardflow::pipeline
