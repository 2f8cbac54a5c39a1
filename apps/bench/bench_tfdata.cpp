// shardflow-bench tfdata: Fashion-MNIST TFRecord input pipelines, shardflow vs TensorFlow's
// tf.data (the peer, optional).
//
//   shardflow-bench tfdata [--json] [--dir D] [--images N] [--shards S] [--batch B]
//                          [--repeat R] [--mode raw|jpeg|both] [--peer]
//     --dir D      where the TFRecord files are written (default build/bench-tfdata); they are
//                  regenerated when missing or written for another --images/--shards
//     --images N   training images from /usr/share/datasets/fashion-mnist (default 60000)
//     --shards S   files per variant (default 8)
//     --batch B    batch size (default 256), --repeat R timed passes (default 5; medians)
//     --parallel-reads N, --parallel-calls N   pipeline threads (default auto)
//     --peer       also run bench/peers/run_tf_peer.sh (TensorFlow tf.data; set
//                  SHARDFLOW_PEER_VENV to a venv with tensorflow) R times, from the source tree
//
// Variants: raw (`image_raw` = 784 uint8 bytes, `label` int64) and jpeg (`image_raw` = the
// image JPEG-encoded at quality 90 by io/pipeline/ops). The shardflow pipeline is what
// BuildInputPipeline builds for the equivalent of the peer's best-practice tf.data pipeline:
// read (parallel), shuffle 10000, parse (+ JPEG decode) by schema fused with batching, cast
// to float32 / 255, prefetch. Each pass is checked (every image once, label sum equal to the
// IDX labels'); the peer's label sum is checked against the same number. Reports records/s
// medians, the ratio shardflow / tf.data and the load average at the start and the end.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/bench/bench_registry.hpp"
#include "io/example.hpp"
#include "io/idx.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/tfrecord_writer.hpp"

namespace shardflow::bench {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

struct Options {
  bool json = false, peer = false;
  std::string dir = "build/bench-tfdata";
  int64_t images = 60000;
  int shards = 8;
  int64_t batch = 256;
  int repeat = 5;
  std::string mode = "both";
  int parallel_reads = pipeline::kAutotune, parallel_calls = pipeline::kAutotune;
};

// Writes `variant` files (raw|jpeg) unless a stamp says they hold these images already.
std::vector<std::string> Generate(const Options& o, const std::string& variant,
                                  const io::IdxImagesLabels& data) {
  namespace fs = std::filesystem;
  fs::create_directories(o.dir);
  std::vector<std::string> files;
  for (int s = 0; s < o.shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "%s-%05d-of-%05d.tfrecord", variant.c_str(), s, o.shards);
    files.push_back((fs::path(o.dir) / name).string());
  }
  const std::string stamp_path = (fs::path(o.dir) / (variant + ".stamp")).string();
  const std::string stamp = std::to_string(o.images) + " " + std::to_string(o.shards);
  std::string have;
  {
    std::ifstream in(stamp_path);
    std::getline(in, have);
  }
  if (have == stamp) return files;
  const int64_t per = (o.images + o.shards - 1) / o.shards;
  const uint8_t* pixels = data.images.data<uint8_t>();
  const uint8_t* labels = data.labels.data<uint8_t>();
  for (int s = 0; s < o.shards; ++s) {
    io::TFRecordWriter w(files[static_cast<size_t>(s)]);
    for (int64_t i = s * per; i < std::min(o.images, (s + 1) * per); ++i) {
      std::string bytes;
      if (variant == "raw") {
        bytes.assign(reinterpret_cast<const char*>(pixels + i * 784), 784);
      } else {
        Tensor img(DType::kUInt8, {28, 28, 1});
        std::copy(pixels + i * 784, pixels + (i + 1) * 784, img.data<uint8_t>());
        bytes = pipeline::EncodeJpeg(img, 90);
      }
      io::ExampleBuilder b;
      b.AddBytes("image_raw", {bytes}).AddInt64("label", {static_cast<int64_t>(labels[i])});
      w.Write(b.Serialize());
    }
    w.Close();
  }
  std::ofstream(stamp_path) << stamp << "\n";
  return files;
}

struct Pass {
  double seconds = 0;
  int64_t records = 0, label_sum = 0;
};

Pass RunShardflow(const Options& o, const std::vector<std::string>& files, bool jpeg) {
  pipeline::InputSpec spec;
  spec.data.files = files;
  spec.features = {jpeg ? "image_raw:image:uint8:28x28x1" : "image_raw:bytes:uint8:28x28x1",
                   "label:int64:int64:scalar"};
  spec.data.augmentations = {"scale:0.003921568627"};
  spec.data.image_feature = "image_raw";
  spec.data.batch_size = o.batch;
  spec.data.shuffle_buffer = 10000;
  spec.data.seed = 1;
  spec.data.parallel_reads = o.parallel_reads;
  spec.data.parallel_calls = o.parallel_calls;
  const pipeline::Dataset ds = pipeline::BuildInputPipeline(spec, 0, 1);
  Pass p;
  const double start = Now();
  pipeline::PipelineIterator it = ds.MakeIterator();
  pipeline::Element batch;
  while (it.Next(&batch)) {
    const Tensor& label = batch.Get("label");
    for (int64_t i = 0; i < label.dim(0); ++i) p.label_sum += label.data<int64_t>()[i];
    p.records += label.dim(0);
    if (batch.Get("image_raw").dtype() != DType::kFloat32) p.records = -1;
  }
  p.seconds = Now() - start;
  return p;
}

bool RunPeer(const Options& o, const std::vector<std::string>& files, const std::string& mode,
             nlohmann::json* out) {
  std::string cmd = "bench/peers/run_tf_peer.sh";
  for (const auto& f : files) cmd += " '" + f + "'";
  cmd += " --mode " + mode + " --batch " + std::to_string(o.batch) + " --epochs 2";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return false;
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), p) != nullptr) text += buf;
  if (::pclose(p) != 0) return false;
  const size_t brace = text.rfind('{');
  if (brace == std::string::npos) return false;
  *out = nlohmann::json::parse(text.substr(brace), nullptr, false);
  return !out->is_discarded() && out->contains("records_per_s");
}

int Run(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "tfdata: %s needs a value\n", args[i].c_str());
        std::exit(2);
      }
      return args[++i];
    };
    if (args[i] == "--json") {
      o.json = true;
    } else if (args[i] == "--peer") {
      o.peer = true;
    } else if (args[i] == "--dir") {
      o.dir = value();
    } else if (args[i] == "--images") {
      o.images = std::stoll(value());
    } else if (args[i] == "--shards") {
      o.shards = std::stoi(value());
    } else if (args[i] == "--batch") {
      o.batch = std::stoll(value());
    } else if (args[i] == "--repeat") {
      o.repeat = std::stoi(value());
    } else if (args[i] == "--parallel-reads") {
      o.parallel_reads = std::stoi(value());
    } else if (args[i] == "--parallel-calls") {
      o.parallel_calls = std::stoi(value());
    } else if (args[i] == "--mode") {
      o.mode = value();
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf(
          "usage: shardflow-bench tfdata [--json] [--dir D] [--images N] [--shards S] [--batch B]\n"
          "                              [--repeat R] [--mode raw|jpeg|both] [--peer]\n"
          "                              [--parallel-reads N] [--parallel-calls N]\n");
      return 0;
    } else {
      std::fprintf(stderr, "tfdata: unknown argument '%s' (shardflow-bench tfdata --help)\n",
                   args[i].c_str());
      return 2;
    }
  }
  if (o.images < 1 || o.images > 60000 || o.shards < 1 || o.batch < 1 || o.repeat < 1 ||
      (o.mode != "raw" && o.mode != "jpeg" && o.mode != "both")) {
    std::fprintf(stderr, "tfdata: bad arguments (see the header of bench_tfdata.cpp)\n");
    return 2;
  }
  const std::string load_before = LoadAverage();
  const io::IdxImagesLabels data = io::ReadFashionMnist("train");
  int64_t want_labels = 0;
  for (int64_t i = 0; i < o.images; ++i) want_labels += data.labels.data<uint8_t>()[i];
  bool ok = true;
  std::vector<nlohmann::json> results;
  std::printf("Fashion-MNIST TFRecord, %lld images in %d files, batch %lld, median of %d\n",
              static_cast<long long>(o.images), o.shards, static_cast<long long>(o.batch),
              o.repeat);
  std::printf("%-6s %16s %16s %8s\n", "mode", "shardflow rec/s", "tf.data rec/s", "ratio");
  for (const std::string mode : {"raw", "jpeg"}) {
    if (o.mode != "both" && o.mode != mode) continue;
    const std::vector<std::string> files = Generate(o, mode, data);
    RunShardflow(o, files, mode == "jpeg");  // warm-up: page cache, allocator
    std::vector<double> rates;
    for (int r = 0; r < o.repeat; ++r) {
      const Pass p = RunShardflow(o, files, mode == "jpeg");
      if (p.records != o.images || p.label_sum != want_labels) {
        std::fprintf(
            stderr,
            "tfdata: shardflow %s pass saw %lld records, label sum %lld (want %lld, %lld)\n",
            mode.c_str(), static_cast<long long>(p.records), static_cast<long long>(p.label_sum),
            static_cast<long long>(o.images), static_cast<long long>(want_labels));
        ok = false;
      }
      rates.push_back(static_cast<double>(p.records) / p.seconds);
    }
    const double ours = Median(rates);
    double theirs = 0;
    std::vector<double> peer_rates;
    if (o.peer) {
      for (int r = 0; r < o.repeat; ++r) {
        nlohmann::json j;
        if (!RunPeer(o, files, mode, &j)) {
          std::fprintf(stderr, "tfdata: the tf.data peer failed (mode %s)\n", mode.c_str());
          ok = false;
          break;
        }
        if (j.value("label_sum", int64_t{-1}) != want_labels ||
            j.value("records", int64_t{-1}) != o.images) {
          std::fprintf(stderr, "tfdata: tf.data saw %s\n", j.dump().c_str());
          ok = false;
        }
        peer_rates.push_back(j["records_per_s"].get<double>());
      }
      theirs = Median(peer_rates);
    }
    std::printf("%-6s %16.0f %16s %8s\n", mode.c_str(), ours,
                o.peer ? std::to_string(static_cast<int64_t>(theirs)).c_str() : "-",
                theirs > 0 ? (std::to_string(ours / theirs).substr(0, 5) + "x").c_str() : "-");
    results.push_back({{"bench", "tfdata"},
                       {"mode", mode},
                       {"images", o.images},
                       {"batch", o.batch},
                       {"shardflow_records_per_s", ours},
                       {"shardflow_runs", rates},
                       {"tfdata_records_per_s", theirs},
                       {"tfdata_runs", peer_rates},
                       {"ratio", theirs > 0 ? ours / theirs : 0.0},
                       {"label_sum", want_labels}});
  }
  const std::string load_after = LoadAverage();
  std::printf("load average: %s (start), %s (end); %u hardware threads\n", load_before.c_str(),
              load_after.c_str(), std::thread::hardware_concurrency());
  if (o.json) {
    for (auto& r : results) {
      r["load_before"] = load_before;
      r["load_after"] = load_after;
      std::printf("%s\n", r.dump().c_str());
    }
  }
  return ok ? 0 : 1;
}

}  // namespace

SHARDFLOW_BENCH("tfdata", "Fashion-MNIST TFRecord pipeline (raw, JPEG) vs TensorFlow tf.data", Run);

}  // namespace shardflow::bench
