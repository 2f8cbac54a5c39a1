// libFuzzer target: data.assemble's feature columns (io/pipeline/feature_columns.hpp) on
// arbitrary bytes: the first line is an id column's kind ("ids=4:hash=100:sep=;"), the rest the
// value of its feature, as a string and as int64 values. A kind either parses or is refused with
// shardflow::Error; a value either gives slots that are -1 or ids in the entry's range, or is
// refused with shardflow::Error, never anything else. Boundaries likewise.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.hpp"
#include "io/pipeline/feature_columns.hpp"

using namespace shardflow;
using namespace shardflow::pipeline;

namespace {

void CheckSlots(const IdColumn& c, const Element& e) {
  std::vector<float> out(static_cast<size_t>(c.width()), 0.5f);
  try {
    WriteIds(c, e, out.data());
  } catch (const Error&) {
    return;
  }
  for (float v : out) {
    if (v != -1.f &&
        !(v >= static_cast<float>(c.offset) && v < static_cast<float>(c.offset + c.buckets))) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const size_t nl = bytes.find('\n');
  const std::string kind = bytes.substr(0, nl),
                    value = nl == std::string::npos ? "" : bytes.substr(nl + 1);
  try {
    const std::vector<double> b = ParseBoundaries(kind, "k", "e");
    for (size_t i = 1; i < b.size(); ++i) {
      if (!(b[i - 1] < b[i])) std::abort();
    }
    if (!b.empty() && BucketIndex(b, b.back()) != static_cast<int64_t>(b.size())) std::abort();
  } catch (const Error&) {
  }
  IdColumn c;
  try {
    c = ParseIdColumn("v", kind, "k", "e");
  } catch (const Error&) {
    return 0;
  }
  c.offset = 3;
  Element e;
  Tensor text(DType::kUInt8, {static_cast<int64_t>(value.size())});
  if (!value.empty()) std::memcpy(text.raw_data(), value.data(), value.size());
  e.Set("v", text);
  CheckSlots(c, e);
  Tensor ints(DType::kInt64, {static_cast<int64_t>(value.size() / 8)});
  if (ints.num_elements() > 0) std::memcpy(ints.raw_data(), value.data(), ints.byte_size());
  e.Set("v", ints);
  CheckSlots(c, e);
  return 0;
}
