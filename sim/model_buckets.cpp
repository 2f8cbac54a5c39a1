// shardflow-sim-buckets: the gradient buckets the data-parallel trainer all-reduces for a model,
// as JSON, for the step replay of the simulation (slurm/simulate_study.py; docs/simulation.md).
//
//   shardflow-sim-buckets --model mlp|cnn|resnet|SPEC [--input-shape 28,28,1] [--bucket-mb 4]
//   {"model":"cnn","parameters":3274634,"bucket_mb":4,"buckets":[4194304,...]}
//
// The buckets are Arena::Buckets(bucket_mb MiB) of the model built from the spec, exactly as
// apps/train/strategies/data_parallel/data_parallel.cpp makes them, listed in the order backprop
// finishes them (a bucket is final once its lowest layer's backward has run: highest lowest_layer
// first). Sizes are in bytes of float32.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/model.hpp"

namespace {

using shardflow::Error;
using shardflow::ErrorCode;

struct Args {
  std::string model = "mlp";
  shardflow::Shape input_shape = {28, 28, 1};
  double bucket_mb = 4;
};

shardflow::Shape ParseShape(const std::string& text) {
  shardflow::Shape shape;
  size_t start = 0;
  while (start < text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    shape.push_back(std::stoll(text.substr(start, comma - start)));
    start = comma + 1;
  }
  return shape;
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      throw Error(ErrorCode::kInvalidArgument, "flag " + flag + " needs a value", {.key = flag});
    }
    const std::string value = argv[++i];
    if (flag == "--model") {
      a.model = value;
    } else if (flag == "--input-shape") {
      a.input_shape = ParseShape(value);
    } else if (flag == "--bucket-mb") {
      a.bucket_mb = std::stod(value);
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown flag '" + flag + "'",
                  {.hint = "--model NAME --input-shape 28,28,1 --bucket-mb 4"});
    }
  }
  return a;
}

int Run(int argc, char** argv) {
  const Args a = ParseArgs(argc, argv);
  shardflow::Sequential<float> model(shardflow::PresetSpec(a.model, a.input_shape), a.input_shape);
  std::vector<shardflow::GradBucket> buckets =
      model.arena().Buckets(static_cast<size_t>(std::max(1.0, a.bucket_mb * (1 << 20))));
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const auto& x, const auto& y) { return x.lowest_layer > y.lowest_layer; });
  int64_t parameters = 0;
  std::string list;
  for (const shardflow::GradBucket& b : buckets) {
    parameters += b.size;
    if (!list.empty()) list += ",";
    list += std::to_string(b.size * static_cast<int64_t>(sizeof(float)));
  }
  std::printf("{\"model\":\"%s\",\"parameters\":%lld,\"bucket_mb\":%g,\"buckets\":[%s]}\n",
              a.model.c_str(), static_cast<long long>(parameters), a.bucket_mb, list.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardflow-sim-buckets: error: %s\n", e.what());
    return 2;
  }
}
