#include "apps/train/strategies/model_parallel/whole_params.hpp"

#include <cstring>
#include <map>

#include "comm/collectives.hpp"
#include "core/error.hpp"

namespace shardflow::train {
namespace {

template <typename T>
void Put(std::vector<uint8_t>* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(T));
}

template <typename T>
T Take(const std::vector<uint8_t>& in, size_t* at) {
  T v;
  if (*at + sizeof(T) > in.size()) throw Error(ErrorCode::kInternal, "short parameter message");
  std::memcpy(&v, in.data() + *at, sizeof(T));
  *at += sizeof(T);
  return v;
}

// Per parameter: name length, name, split axis, split begin, rank, shape, values.
std::vector<uint8_t> Pack(Sequential<float>& part) {
  std::vector<uint8_t> out;
  Arena<float>& arena = part.arena();
  for (int id = 0; id < arena.num_params(); ++id) {
    const ParamSpec& s = arena.spec(id);
    const std::string name = s.FullName();
    Put(&out, static_cast<uint32_t>(name.size()));
    out.insert(out.end(), name.begin(), name.end());
    Put(&out, static_cast<int32_t>(s.split_axis));
    Put(&out, static_cast<int64_t>(s.split_begin));
    Put(&out, static_cast<int32_t>(s.shape.size()));
    for (int64_t d : s.shape) Put(&out, d);
    const auto* v = reinterpret_cast<const uint8_t*>(arena.param(id));
    out.insert(out.end(), v, v + s.size * static_cast<int64_t>(sizeof(float)));
  }
  return out;
}

// Copies a slice (shape `slice`, along `axis` from `begin`) into the whole tensor `full`.
void PlaceSlice(const float* src, const Shape& slice, int axis, int64_t begin, const Shape& whole,
                float* dst) {
  if (axis < 0) {
    std::memcpy(dst, src, static_cast<size_t>(NumElements(whole)) * sizeof(float));
    return;
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= whole[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < whole.size(); ++d) inner *= whole[d];
  const int64_t k = slice[static_cast<size_t>(axis)], full = whole[static_cast<size_t>(axis)];
  for (int64_t o = 0; o < outer; ++o) {
    std::memcpy(dst + (o * full + begin) * inner, src + o * k * inner,
                static_cast<size_t>(k * inner) * sizeof(float));
  }
}

}  // namespace

std::vector<float> GatherWholeParams(comm::Communicator& comm, bool contributes,
                                     Sequential<float>& part, const std::string& spec,
                                     const Shape& input_shape, const ModelOptions& options) {
  const std::vector<uint8_t> mine = contributes ? Pack(part) : std::vector<uint8_t>();
  const std::vector<std::vector<uint8_t>> all = comm::GatherBytes(comm, mine.data(), mine.size());
  std::vector<float> whole;
  int64_t size = 0;
  if (comm.rank() == 0) {
    ModelOptions plain = options;
    plain.tensor_parallel = {};
    plain.device = Device::kCpu;  // assembled in host memory, whatever the parts ran on
    Sequential<float> model(spec, input_shape, plain);
    Arena<float>& arena = model.arena();
    std::map<std::string, int> ids;
    for (int id = 0; id < arena.num_params(); ++id) ids[arena.spec(id).FullName()] = id;
    std::vector<int64_t> filled(static_cast<size_t>(arena.num_params()), 0);
    for (const std::vector<uint8_t>& msg : all) {
      size_t at = 0;
      while (at < msg.size()) {
        const uint32_t len = Take<uint32_t>(msg, &at);
        const std::string name(msg.begin() + static_cast<long>(at),
                               msg.begin() + static_cast<long>(at + len));
        at += len;
        const int axis = Take<int32_t>(msg, &at);
        const int64_t begin = Take<int64_t>(msg, &at);
        Shape shape(static_cast<size_t>(Take<int32_t>(msg, &at)));
        for (int64_t& d : shape) d = Take<int64_t>(msg, &at);
        const auto it = ids.find(name);
        if (it == ids.end()) throw Error(ErrorCode::kInternal, "no parameter " + name);
        const int64_t n = NumElements(shape);
        if (at + static_cast<size_t>(n) * sizeof(float) > msg.size()) {
          throw Error(ErrorCode::kInternal, "short parameter message for " + name);
        }
        std::vector<float> values(static_cast<size_t>(n));
        std::memcpy(values.data(), msg.data() + at, values.size() * sizeof(float));
        at += values.size() * sizeof(float);
        const ParamSpec& s = arena.spec(it->second);
        PlaceSlice(values.data(), shape, axis, begin, s.shape, arena.param(it->second));
        filled[static_cast<size_t>(it->second)] += n;
      }
    }
    for (int id = 0; id < arena.num_params(); ++id) {
      // Replicated parameters arrive once per tensor way: at least the whole must have come.
      if (filled[static_cast<size_t>(id)] < arena.spec(id).size) {
        throw Error(ErrorCode::kInternal, "no rank sent all of " + arena.spec(id).FullName());
      }
    }
    whole.assign(arena.params(), arena.params() + arena.size());
    size = arena.size();
  }
  size = comm::AllreduceInt64(comm, size, comm::ReduceOp::kMax);
  whole.resize(static_cast<size_t>(size));
  comm::Broadcast(comm, whole.data(), whole.size(), 0);
  return whole;
}

}  // namespace shardflow::train
