// shardflow-bench fmnist: accuracy benchmark, one process, full Fashion-MNIST.
//
//   shardflow-bench fmnist [--model mlp] [--epochs 15] [--batch 128] [--lr 0.001]
//                          [--optimizer adam] [--threads 1] [--data DIR] [--json]
//
// Trains a preset on the 60000 training images (shuffled each epoch by a counter-based
// permutation keyed by (seed, epoch)), with a cosine learning-rate schedule, and reports test
// accuracy on the 10000 test images after every epoch, with the time spent. Design targets:
// MLP >= 0.89, CNN >= 0.91 test accuracy. The IDX gz files are read here with zlib (the
// pipeline's IDX reader lives in io/, which this benchmark does not need).
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "apps/bench/bench_registry.hpp"
#include "core/cpu/gemm.hpp"
#include "core/loss.hpp"
#include "core/metrics.hpp"
#include "core/model.hpp"
#include "core/mpi_env.hpp"
#include "core/optim/lr_schedule.hpp"
#include "core/optim/optimizer.hpp"
#include "core/random.hpp"

namespace shardflow::bench {
namespace {

// Reads an IDX gz file (magic 0x00 0x00 0x08 ndims, big-endian dims, unsigned bytes).
std::vector<uint8_t> ReadIdx(const std::string& path, std::vector<int64_t>* dims) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw Error(ErrorCode::kNotFound, "cannot open IDX file", {.file = path});
  unsigned char head[4];
  std::vector<uint8_t> out;
  bool ok = gzread(f, head, 4) == 4 && head[0] == 0 && head[1] == 0 && head[2] == 0x08;
  for (int i = 0; ok && i < head[3]; ++i) {
    unsigned char b[4];
    ok = gzread(f, b, 4) == 4;
    dims->push_back((int64_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3]);
  }
  if (ok) {
    int64_t n = 1;
    for (int64_t d : *dims) n *= d;
    out.resize(static_cast<size_t>(n));
    ok = gzread(f, out.data(), static_cast<unsigned>(n)) == n;
  }
  gzclose(f);
  if (!ok) throw Error(ErrorCode::kDataLoss, "truncated or invalid IDX file", {.file = path});
  return out;
}

struct Split {
  std::vector<float> images;  // (N, 28, 28, 1) in [0, 1]
  std::vector<int32_t> labels;
  int64_t n = 0;
};

Split Load(const std::string& dir, const std::string& prefix) {
  std::vector<int64_t> idims, ldims;
  const auto img = ReadIdx(dir + "/" + prefix + "-images-idx3-ubyte.gz", &idims);
  const auto lab = ReadIdx(dir + "/" + prefix + "-labels-idx1-ubyte.gz", &ldims);
  if (idims.size() != 3 || idims[1] != 28 || idims[2] != 28 || ldims.size() != 1 ||
      ldims[0] != idims[0]) {
    throw Error(ErrorCode::kInvalidArgument, "unexpected Fashion-MNIST shapes", {.file = dir});
  }
  Split s;
  s.n = idims[0];
  s.images.resize(img.size());
  for (size_t i = 0; i < img.size(); ++i) s.images[i] = img[i] / 255.0f;
  s.labels.assign(lab.begin(), lab.end());
  return s;
}

int RunFmnist(const std::vector<std::string>& args) {
  std::string model = "mlp", optimizer = "adam", dir = "/usr/share/datasets/fashion-mnist";
  int64_t epochs = 15, batch = 128;
  double lr = 0.001;
  int threads = 1;
  bool json = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& k = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error(ErrorCode::kInvalidArgument, k + " needs a value");
      return args[++i];
    };
    try {
      if (k == "--model")
        model = value();
      else if (k == "--optimizer")
        optimizer = value();
      else if (k == "--data")
        dir = value();
      else if (k == "--epochs")
        epochs = std::stoll(value());
      else if (k == "--batch")
        batch = std::stoll(value());
      else if (k == "--lr")
        lr = std::stod(value());
      else if (k == "--threads")
        threads = std::stoi(value());
      else if (k == "--json")
        json = true;
      else if (k == "--help" || k == "-h") {
        std::printf(
            "usage: shardflow-bench fmnist [--model mlp] [--epochs 15] [--batch 128] "
            "[--lr 0.001]\n"
            "                              [--optimizer adam] [--threads 1] [--data DIR] "
            "[--json]\n");
        throw EarlyExit{0};
      } else
        throw Error(ErrorCode::kInvalidArgument, "unknown flag '" + k + "'",
                    {.hint = "shardflow-bench fmnist --help"});
    } catch (const std::logic_error&) {
      throw Error(ErrorCode::kInvalidArgument, "bad value for " + k);
    }
  }
  if (epochs <= 0 || batch <= 0 || !(lr > 0)) {
    throw Error(ErrorCode::kInvalidArgument, "epochs, batch and lr must be positive");
  }
  cpu::SetIntraOpThreads(threads);
  const Split train = Load(dir, "train"), test = Load(dir, "t10k");
  Sequential<float> m(model, {28, 28, 1});
  auto opt = MakeOptimizer({.name = optimizer}, m.arena().size());
  const int64_t steps_per_epoch = train.n / batch;  // drop the remainder
  const LrScheduleOptions sched{
      .kind = "cosine", .base_lr = lr, .warmup_steps = 0, .total_steps = epochs * steps_per_epoch};
  ValidateLrSchedule(sched);
  std::printf("%s", m.Summary().c_str());
  std::printf("%6s %10s %10s %10s %9s\n", "epoch", "loss", "train_acc", "test_acc", "time_s");
  Tensor x(DType::kFloat32, {batch, 28, 28, 1}), y(DType::kInt32, {batch}), d;
  std::vector<int64_t> order(static_cast<size_t>(train.n));
  const auto t0 = std::chrono::steady_clock::now();
  double test_acc = 0;
  int64_t step = 0;
  for (int64_t e = 0; e < epochs; ++e) {
    std::iota(order.begin(), order.end(), 0);
    for (int64_t i = train.n - 1; i > 0; --i) {  // Fisher-Yates keyed by (seed, epoch, i)
      std::swap(order[i], order[RandomBits(7, e, i) % static_cast<uint64_t>(i + 1)]);
    }
    MeanMetric loss, acc;
    for (int64_t s = 0; s < steps_per_epoch; ++s, ++step) {
      for (int64_t i = 0; i < batch; ++i) {
        const int64_t k = order[s * batch + i];
        std::copy_n(train.images.data() + k * 784, 784, x.data<float>() + i * 784);
        y.data<int32_t>()[i] = train.labels[k];
      }
      m.set_step(step);
      m.arena().ZeroGrads();
      const Tensor logits = m.Forward(x, true);
      loss.Add(SoftmaxCrossEntropy<float>(logits, y, &d) * batch, batch);
      acc.Add(CountCorrect<float>(logits, y), batch);
      m.Backward(d);
      opt->Step(m.arena(), LearningRate(sched, step));
    }
    MeanMetric tacc;
    for (int64_t s = 0; s < test.n; s += batch) {
      const int64_t n = std::min(batch, test.n - s);
      Tensor tx = Tensor::View(const_cast<float*>(test.images.data()) + s * 784, DType::kFloat32,
                               {n, 28, 28, 1});
      Tensor ty = Tensor::View(const_cast<int32_t*>(test.labels.data()) + s, DType::kInt32, {n});
      tacc.Add(CountCorrect<float>(m.Forward(tx, false), ty), n);
    }
    test_acc = tacc.Mean();
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%6lld %10.4f %10.4f %10.4f %9.1f\n", static_cast<long long>(e + 1), loss.Mean(),
                acc.Mean(), test_acc, elapsed);
    std::fflush(stdout);  // progress visible when stdout is a file
    if (json) {
      std::printf("%s\n", nlohmann::json{{"bench", "fmnist"},
                                         {"model", model},
                                         {"epoch", e + 1},
                                         {"loss", loss.Mean()},
                                         {"train_accuracy", acc.Mean()},
                                         {"test_accuracy", test_acc},
                                         {"seconds", elapsed}}
                              .dump()
                              .c_str());
    }
  }
  return 0;
}

}  // namespace

SHARDFLOW_BENCH("fmnist", "Fashion-MNIST test accuracy of a preset (targets: mlp 0.89, cnn 0.91)",
                RunFmnist);

}  // namespace shardflow::bench
