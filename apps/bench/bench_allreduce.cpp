// shardflow-bench allreduce: our all-reduce algorithms and the MPI library's own side by side, in
// the style of nccl-tests. For each message size and algorithm it prints the time per call (median
// over --repeats of the mean over --iters calls, slowest rank), algorithm bandwidth
// algbw = bytes / time, bus bandwidth busbw = algbw * 2 (n - 1) / n (what each rank's links
// carry; comparable across rank counts), busbw relative to the library's all-reduce in the same run
// and relative to single-core memcpy bandwidth measured in the same run, and a result check.
//
//   mpirun -np 4 shardflow-bench allreduce [--json] [--min-bytes 8] [--max-bytes 64M]
//          [--step-factor 2] [--iters 20] [--warmup 3] [--repeats 3] [--segment-bytes 0]
//          [--algorithms ring,rd,shm,shm-inplace,hierarchical,mpi,auto,ring/bf16]
// To compare with OpenMPI's ring, add
//   --mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4
// to mpirun: the "mpi" rows then measure the forced ring.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/bench/bench_flags.hpp"
#include "apps/bench/bench_registry.hpp"
#include "comm/allreduce.hpp"
#include "comm/allreduce_shm.hpp"
#include "comm/collectives.hpp"
#include "comm/communicator.hpp"
#include "core/error.hpp"

namespace shardflow::bench {
namespace {

using comm::AllreduceAlgorithm;
using comm::WireFormat;

struct Variant {
  std::string label;
  AllreduceAlgorithm algorithm;
  WireFormat wire;
  size_t segment_bytes;  // 0: --segment-bytes
  // "shm-inplace": the buffer lives in shared memory (comm::SharedFloatBuffer) and is reduced
  // in place by comm::AllreduceShared, as a data-parallel job's gradient arena is.
  bool shared_in_place = false;
};

// The default list; shm and shm-inplace are dropped when the ranks span several nodes.
constexpr const char* kDefaultVariants = "ring,rd,shm,shm-inplace,hierarchical,mpi,auto,ring/bf16";

struct Options {
  bool help = false;
  bool json = false;
  size_t min_bytes = 8;
  size_t max_bytes = size_t{64} << 20;
  size_t step_factor = 2;
  int iters = 20;
  int warmup = 3;
  int repeats = 3;
  size_t segment_bytes = 0;
  std::vector<Variant> variants;
  bool variants_are_default = true;
};

constexpr const char* kUsage =
    "usage: shardflow-bench allreduce [flags]\n"
    "  --json               also print one JSON object per result (default off)\n"
    "  --min-bytes N        smallest message, bytes, K/M suffixes allowed (default 8)\n"
    "  --max-bytes N        largest message (default 64M)\n"
    "  --step-factor F      size multiplier between rows (default 2)\n"
    "  --iters N            timed calls per measurement (default 20)\n"
    "  --warmup N           untimed calls before each measurement (default 3)\n"
    "  --repeats N          measurements per row; the median is reported (default 3)\n"
    "  --segment-bytes N    ring segment size, 0 = built-in default (default 0)\n"
    "  --algorithms LIST    comma-separated NAME[/WIRE][@SEGMENT]: NAME ring rd shm shm-inplace\n"
    "                       hierarchical mpi auto; WIRE bf16 or fp16; SEGMENT a ring segment\n"
    "                       (or shm slot) size that overrides --segment-bytes, e.g. ring@4M\n"
    "                       (default ring,rd,shm,shm-inplace,hierarchical,mpi,auto,ring/bf16;\n"
    "                       shm-inplace: the buffer in shared memory, reduced in place)\n";

std::vector<Variant> ParseVariants(const std::string& list) {
  std::vector<Variant> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) continue;
    // NAME[/WIRE][@SEGMENT]
    const size_t at = item.find('@');
    const std::string head = item.substr(0, at);
    const size_t slash = head.find('/');
    Variant v;
    v.label = item;
    const std::string name = head.substr(0, slash);
    v.shared_in_place = name == "shm-inplace";
    v.algorithm = v.shared_in_place ? AllreduceAlgorithm::kShm : comm::ParseAlgorithm(name);
    v.wire = slash == std::string::npos ? WireFormat::kFloat32
                                        : comm::ParseWireFormat(head.substr(slash + 1));
    v.segment_bytes = at == std::string::npos ? 0 : ParseBytes("--algorithms", item.substr(at + 1));
    out.push_back(v);
  }
  if (out.empty()) throw Error(ErrorCode::kInvalidArgument, "--algorithms is empty");
  return out;
}

Options Parse(const std::vector<std::string>& args, int rank) {
  Options o;
  o.variants = ParseVariants(kDefaultVariants);
  for (FlagCursor f(args, "allreduce"); f.Next();) {
    if (f.IsHelp()) {
      if (rank == 0) std::fputs(kUsage, stdout);
      o.help = true;
      return o;
    } else if (f.Is("--json")) {
      o.json = true;
    } else if (f.Is("--min-bytes")) {
      o.min_bytes = ParseBytes(f.flag(), f.Value());
    } else if (f.Is("--max-bytes")) {
      o.max_bytes = ParseBytes(f.flag(), f.Value());
    } else if (f.Is("--step-factor")) {
      o.step_factor = static_cast<size_t>(ParsePositive(f.flag(), f.Value()));
    } else if (f.Is("--iters")) {
      o.iters = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--warmup")) {
      o.warmup = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--repeats")) {
      o.repeats = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--segment-bytes")) {
      o.segment_bytes = ParseBytes(f.flag(), f.Value());
    } else if (f.Is("--algorithms")) {
      o.variants = ParseVariants(f.Value());
      o.variants_are_default = false;
    } else {
      f.Unknown();
    }
  }
  if (o.min_bytes < sizeof(float) || o.max_bytes < o.min_bytes || o.step_factor < 2) {
    throw Error(ErrorCode::kInvalidArgument,
                "need 4 <= --min-bytes <= --max-bytes and --step-factor >= 2");
  }
  return o;
}

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Single-core memcpy bandwidth (bytes copied per second), best of 10, on rank 0 alone.
double MeasureMemcpy(size_t bytes) {
  std::vector<char> a(bytes, 1), b(bytes, 2);
  double best = 1e30;
  for (int i = 0; i < 10; ++i) {
    const double t0 = Seconds();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, Seconds() - t0);
    a[static_cast<size_t>(i)] = b[bytes - 1 - static_cast<size_t>(i)];  // keep the copies live
  }
  return static_cast<double>(bytes) / best;
}

// Input value of element i on rank r: quarter units, exact in float32 and bf16 for small sums.
float InputValue(int rank, size_t i) {
  return static_cast<float>((rank + 1) * static_cast<int>(i % 13 + 1)) * 0.25f;
}

// The buffer a variant reduces: its own, or the shared one.
struct Buffers {
  std::vector<float>* plain;
  comm::SharedFloatBuffer* shared;  // null unless some variant is shm-inplace
  float* For(const Variant& v) const { return v.shared_in_place ? shared->data() : plain->data(); }
  size_t count() const { return plain->size(); }
};

void RunVariant(comm::Communicator& c, const Variant& v, const comm::AllreduceOptions& opts,
                const Buffers& b) {
  if (v.shared_in_place) {
    comm::AllreduceShared(*b.shared, 0, b.count(), opts.mode);
  } else {
    comm::Allreduce(c, b.plain->data(), b.count(), opts);
  }
}

bool CheckOnce(comm::Communicator& c, const Variant& v, const comm::AllreduceOptions& opts,
               const Buffers& b) {
  const int n = c.size();
  float* data = b.For(v);
  for (size_t i = 0; i < b.count(); ++i) data[i] = InputValue(c.rank(), i);
  RunVariant(c, v, opts, b);
  const double tol = v.wire == WireFormat::kFloat32 ? 1e-6 : 1e-2;
  int ok = 1;
  for (size_t i = 0; i < b.count() && ok; ++i) {
    const double want = (i % 13 + 1) * 0.25 * n * (n + 1) / 2.0;
    if (std::fabs(data[i] - want) > tol * want) ok = 0;
  }
  return comm::AllreduceInt64(c, ok, comm::ReduceOp::kMin) == 1;
}

double TimeOnce(comm::Communicator& c, const Variant& v, const comm::AllreduceOptions& opts,
                const Buffers& b, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) RunVariant(c, v, opts, b);
  comm::Barrier(c);
  const double t0 = Seconds();
  for (int i = 0; i < iters; ++i) RunVariant(c, v, opts, b);
  double elapsed = (Seconds() - t0) / iters;
  return comm::AllreduceDouble(c, elapsed, comm::ReduceOp::kMax);
}

int RunAllreduce(const std::vector<std::string>& args) {
  comm::Communicator c(comm::Group::kWorld);
  const int world_rank = c.rank();
  Options o;
  if (!ParsedOnEveryRank(c, [&] { o = Parse(args, world_rank); })) {
    return ExitCodeFor(ErrorCode::kInvalidArgument);
  }
  if (o.help) return 0;
  const int n = c.size();
  const bool root = c.rank() == 0;
  if (c.num_nodes() > 1 && o.variants_are_default) {
    std::erase_if(o.variants,
                  [](const Variant& v) { return v.algorithm == AllreduceAlgorithm::kShm; });
  }
  const bool any_shared = std::any_of(o.variants.begin(), o.variants.end(),
                                      [](const Variant& v) { return v.shared_in_place; });

  double memcpy_bw = 0;
  if (root) memcpy_bw = MeasureMemcpy(std::max<size_t>(o.max_bytes, size_t{16} << 20));
  comm::Broadcast(c, &memcpy_bw, 1);

  if (root) {
    std::printf(
        "# all-reduce float32 sum in place, %d ranks (%d node(s)), iters %d, repeats %d "
        "(median), single-core memcpy %.2f GB/s\n",
        n, c.num_nodes(), o.iters, o.repeats, memcpy_bw / 1e9);
    std::printf("%12s %-14s %11s %10s %10s %7s %8s %5s\n", "bytes", "algorithm", "time(us)",
                "algbw", "busbw", "vs_mpi", "/memcpy", "check");
  }
  int failures = 0;
  const size_t mpi_index = std::find_if(o.variants.begin(), o.variants.end(),
                                        [](const Variant& v) {
                                          return v.algorithm == AllreduceAlgorithm::kMpi &&
                                                 v.wire == WireFormat::kFloat32;
                                        }) -
                           o.variants.begin();
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) {
    const size_t count = bytes / sizeof(float);
    std::vector<float> data(count);
    std::unique_ptr<comm::SharedFloatBuffer> shared;
    if (any_shared) shared = std::make_unique<comm::SharedFloatBuffer>(c, count);
    const Buffers buffers{&data, shared.get()};
    std::vector<bool> ok(o.variants.size());
    std::vector<std::vector<double>> times(o.variants.size());
    for (size_t k = 0; k < o.variants.size(); ++k) {
      const comm::AllreduceOptions opts{.algorithm = o.variants[k].algorithm,
                                        .wire = o.variants[k].wire,
                                        .segment_bytes = o.variants[k].segment_bytes
                                                             ? o.variants[k].segment_bytes
                                                             : o.segment_bytes};
      ok[k] = CheckOnce(c, o.variants[k], opts, buffers);
    }
    // Zeros stay zeros under repeated in-place sums: no overflow, no denormals while timing.
    std::fill(data.begin(), data.end(), 0.0f);
    if (shared) std::fill(shared->data(), shared->data() + count, 0.0f);
    for (int r = 0; r < o.repeats; ++r) {
      for (size_t k = 0; k < o.variants.size(); ++k) {  // interleaved: noise hits all alike
        const comm::AllreduceOptions opts{.algorithm = o.variants[k].algorithm,
                                          .wire = o.variants[k].wire,
                                          .segment_bytes = o.variants[k].segment_bytes
                                                               ? o.variants[k].segment_bytes
                                                               : o.segment_bytes};
        times[k].push_back(TimeOnce(c, o.variants[k], opts, buffers, o.warmup, o.iters));
      }
    }
    std::vector<double> busbw(o.variants.size());
    std::vector<double> median(o.variants.size());
    for (size_t k = 0; k < o.variants.size(); ++k) {
      std::sort(times[k].begin(), times[k].end());
      median[k] = times[k][times[k].size() / 2];
      const double algbw = static_cast<double>(count * sizeof(float)) / median[k];
      busbw[k] = n > 1 ? algbw * 2.0 * (n - 1) / n : algbw;
    }
    for (size_t k = 0; k < o.variants.size(); ++k) {
      const Variant& v = o.variants[k];
      const double algbw = static_cast<double>(count * sizeof(float)) / median[k];
      const double vs_mpi = mpi_index < o.variants.size() ? busbw[k] / busbw[mpi_index] : 0;
      if (!ok[k]) ++failures;
      if (!root) continue;
      std::printf("%12zu %-14s %11.2f %10.3f %10.3f %7.2f %8.3f %5s\n", count * sizeof(float),
                  v.label.c_str(), median[k] * 1e6, algbw / 1e9, busbw[k] / 1e9, vs_mpi,
                  busbw[k] / memcpy_bw, ok[k] ? "ok" : "FAIL");
      if (o.json) {
        nlohmann::json j = {
            {"bench", "allreduce"},
            {"ranks", n},
            {"bytes", count * sizeof(float)},
            {"algorithm", v.label},
            {"resolved", comm::AlgorithmName(v.algorithm == AllreduceAlgorithm::kAuto
                                                 ? comm::ChooseAlgorithm(c, count * sizeof(float))
                                                 : v.algorithm)},
            {"time_us", median[k] * 1e6},
            {"algbw_gbs", algbw / 1e9},
            {"busbw_gbs", busbw[k] / 1e9},
            {"busbw_vs_mpi", vs_mpi},
            {"memcpy_gbs", memcpy_bw / 1e9},
            {"busbw_vs_memcpy", busbw[k] / memcpy_bw},
            {"iters", o.iters},
            {"repeats", o.repeats},
            {"ok", static_cast<bool>(ok[k])}};
        std::printf("%s\n", j.dump().c_str());
      }
    }
    if (root) std::fflush(stdout);
  }
  if (root && failures > 0)
    std::fprintf(stderr, "allreduce: %d result check(s) failed\n", failures);
  return failures > 0 ? 1 : 0;
}

SHARDFLOW_BENCH("allreduce", "all-reduce algorithms vs the MPI library's (nccl-tests style)",
                RunAllreduce);

}  // namespace
}  // namespace shardflow::bench
