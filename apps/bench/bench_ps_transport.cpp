// shardflow-bench ps-transport: a parameter server's two MPI transports side by side, and the
// workers' all-reduce on the same bytes. For each size (the whole parameter set, split over the
// servers as training splits the arena) every worker pulls the parameters and pushes a gradient
// of the same size, --iters times:
//   p2p  the protocol of shardflow-train's parameter server: a pull request answered by the
//        server's event loop (Poll, then a non-blocking send), the push a header and the data,
//        which the server receives and adds into its buffer;
//   rma  one-sided: a get of the server's parameters, a summing accumulate of the gradient
//        into its buffer, each a passive-target epoch (comm/rma_window.hpp); the server only
//        waits in a barrier.
//   allreduce  the workers' all-reduce (dist.allreduce auto) of the same bytes, as data-parallel
//        training would reduce them instead.
// Reported per size: the time of one pull + push (slowest worker's mean over --iters, median over
// --repeats), the bandwidth each worker moves (pull + push bytes / time), the all-reduce's time
// and bus bandwidth (algbw x 2 (W-1)/W), and checks: every pull sees the server's values and
// every server's buffer ends holding the sum of every push.
//
//   mpirun -np 3 shardflow-bench ps-transport [--servers 1] [--sizes 64K,1M,4M,16M]
//          [--iters 20] [--warmup 3] [--repeats 5] [--allreduce auto] [--json]
// One-sided transfers use shared memory when the ranks share a node (OpenMPI's osc sm maps the
// window); `--mca osc rdma --allreduce ring` measures the path other transports get.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/bench/bench_flags.hpp"
#include "apps/bench/bench_registry.hpp"
#include "comm/allreduce.hpp"
#include "comm/collectives.hpp"
#include "comm/communicator.hpp"
#include "comm/rma_window.hpp"
#include "core/error.hpp"

namespace shardflow::bench {
namespace {

constexpr int kPullTag = 1, kParamsTag = 2, kPushTag = 3, kDoneTag = 4;

struct Options {
  bool help = false;
  bool json = false;
  int servers = 1;
  std::vector<size_t> sizes = {size_t{64} << 10, size_t{1} << 20, size_t{4} << 20,
                               size_t{16} << 20};
  int iters = 20;
  int warmup = 3;
  int repeats = 5;
  comm::AllreduceAlgorithm algorithm = comm::AllreduceAlgorithm::kAuto;
};

constexpr const char* kUsage =
    "usage: mpirun -np N shardflow-bench ps-transport [flags]   (N - servers >= 1 workers)\n"
    "  --servers K      server ranks, the last K (default 1)\n"
    "  --sizes LIST     parameter bytes per row, K/M suffixes (default 64K,1M,4M,16M)\n"
    "  --iters N        pull + push rounds per measurement (default 20)\n"
    "  --warmup N       untimed rounds first (default 3)\n"
    "  --repeats N      measurements per row; the median is reported (default 5)\n"
    "  --allreduce NAME the workers' all-reduce: auto ring recursive_doubling hierarchical mpi\n"
    "                   shm (default auto; under --mca osc rdma or pt2pt pick one without shm)\n"
    "  --json           also print one JSON object per row\n";

Options Parse(const std::vector<std::string>& args, int ranks) {
  Options o;
  for (FlagCursor f(args, "ps-transport"); f.Next();) {
    if (f.IsHelp()) {
      o.help = true;
    } else if (f.Is("--json")) {
      o.json = true;
    } else if (f.Is("--servers")) {
      o.servers = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--sizes")) {
      o.sizes = ParseByteList(f.flag(), f.Value());
    } else if (f.Is("--iters")) {
      o.iters = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--warmup")) {
      o.warmup = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--repeats")) {
      o.repeats = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--allreduce")) {
      o.algorithm = comm::ParseAlgorithm(f.Value());
    } else {
      f.Unknown();
    }
  }
  if (!o.help && o.servers >= ranks) {
    throw Error(ErrorCode::kInvalidArgument,
                std::to_string(o.servers) + " server(s) leave no worker among " +
                    std::to_string(ranks) + " ranks",
                {.key = "--servers", .hint = "run more ranks than servers"});
  }
  return o;
}

double Seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The slice [begin, end) of `count` floats server k holds (the arena cut evenly).
struct Slice {
  size_t begin = 0, size = 0;
};
Slice SliceOf(size_t count, int servers, int k) {
  const size_t begin = count * static_cast<size_t>(k) / static_cast<size_t>(servers);
  const size_t end = count * static_cast<size_t>(k + 1) / static_cast<size_t>(servers);
  return {begin, end - begin};
}

// One size's measurement, every rank: the job's ranks, the workers' own communicator (null on
// servers), this rank's server index (-1 on workers).
class Run {
 public:
  Run(comm::Communicator& job, comm::Communicator* workers, const Options& o, size_t count)
      : job_(job),
        workers_(workers),
        o_(o),
        count_(count),
        num_workers_(job.size() - o.servers),
        server_(job.rank() >= num_workers_ ? job.rank() - num_workers_ : -1) {
    if (server_ >= 0) {
      mine_ = SliceOf(count, o.servers, server_);
      params_.assign(mine_.size, static_cast<float>(server_ + 1));
      sums_.assign(mine_.size, 0.0f);
    } else {
      params_.assign(count, 0.0f);
      grads_.assign(count, 1.0f);
    }
  }

  // Seconds per round on the slowest worker; `ok` false when a check failed.
  double P2p(bool* ok);
  double Rma(bool* ok);
  double Allreduce(bool* ok);

 private:
  int rounds() const { return o_.warmup + o_.iters; }
  bool PulledRight() const;
  bool SummedRight(double pushes) const;
  void Serve();
  double SlowestWorker(double worker_seconds);

  comm::Communicator& job_;
  comm::Communicator* workers_;
  const Options& o_;
  const size_t count_;
  const int num_workers_, server_;
  Slice mine_;
  std::vector<float> params_, grads_, sums_, incoming_;
};

bool Run::PulledRight() const {
  for (int k = 0; k < o_.servers; ++k) {
    const Slice s = SliceOf(count_, o_.servers, k);
    for (size_t i = s.begin; i < s.begin + s.size; ++i) {
      if (params_[i] != static_cast<float>(k + 1)) return false;
    }
  }
  return true;
}

bool Run::SummedRight(double pushes) const {
  return std::all_of(sums_.begin(), sums_.end(),
                     [pushes](float v) { return static_cast<double>(v) == pushes; });
}

double Run::SlowestWorker(double worker_seconds) {
  return comm::AllreduceDouble(job_, worker_seconds, comm::ReduceOp::kMax);
}

// The server side of the p2p protocol: until every worker says done.
void Run::Serve() {
  incoming_.resize(mine_.size);
  int done = 0;
  std::vector<comm::RequestList> answers;
  while (done < num_workers_) {
    const std::optional<comm::Communicator::Envelope> e = job_.Poll();
    if (!e) continue;
    comm::RequestList requests;
    int64_t value = 0;
    if (e->tag == kPullTag) {
      job_.PostRecvBytes(&value, sizeof(value), e->source, kPullTag, requests);
      job_.WaitAll(requests);
      job_.PostSendFloats(params_.data(), mine_.size, e->source, kParamsTag, requests);
      answers.push_back(std::move(requests));
    } else if (e->tag == kPushTag) {
      job_.PostRecvFloats(incoming_.data(), mine_.size, e->source, kPushTag, requests);
      job_.WaitAll(requests);
      for (size_t i = 0; i < mine_.size; ++i) sums_[i] += incoming_[i];
    } else {
      job_.PostRecvBytes(&value, sizeof(value), e->source, kDoneTag, requests);
      job_.WaitAll(requests);
      ++done;
    }
  }
  for (comm::RequestList& r : answers) job_.WaitAll(r);
}

double Run::P2p(bool* ok) {
  std::fill(sums_.begin(), sums_.end(), 0.0f);
  double seconds = 0;
  if (server_ >= 0) {
    Serve();
  } else {
    double t0 = 0;
    for (int round = 0; round < rounds(); ++round) {
      if (round == o_.warmup) t0 = Seconds();
      comm::RequestList requests;
      const int64_t step = round;
      for (int k = 0; k < o_.servers; ++k) {
        const Slice s = SliceOf(count_, o_.servers, k);
        job_.PostRecvFloats(params_.data() + s.begin, s.size, num_workers_ + k, kParamsTag,
                            requests);
        job_.PostSendBytes(&step, sizeof(step), num_workers_ + k, kPullTag, requests);
      }
      job_.WaitAll(requests);
      for (int k = 0; k < o_.servers; ++k) {
        const Slice s = SliceOf(count_, o_.servers, k);
        job_.PostSendFloats(grads_.data() + s.begin, s.size, num_workers_ + k, kPushTag, requests);
      }
      job_.WaitAll(requests);
    }
    seconds = (Seconds() - t0) / o_.iters;
    *ok = *ok && PulledRight();
    comm::RequestList requests;
    const int64_t done = 1;
    for (int k = 0; k < o_.servers; ++k) {
      job_.PostSendBytes(&done, sizeof(done), num_workers_ + k, kDoneTag, requests);
    }
    job_.WaitAll(requests);
  }
  if (server_ >= 0) *ok = *ok && SummedRight(static_cast<double>(num_workers_) * rounds());
  return SlowestWorker(seconds);
}

double Run::Rma(bool* ok) {
  const bool serving = server_ >= 0;
  const size_t bytes = serving ? mine_.size * sizeof(float) : 0;
  comm::RmaWindow params(job_, bytes), sums(job_, bytes);
  if (serving) {
    std::fill_n(static_cast<float*>(params.local()), mine_.size, static_cast<float>(server_ + 1));
    std::fill_n(static_cast<float*>(sums.local()), mine_.size, 0.0f);
  }
  std::fill(params_.begin(), params_.end(), serving ? static_cast<float>(server_ + 1) : 0.0f);
  comm::Barrier(job_);  // the servers' windows hold their values
  double seconds = 0;
  if (!serving) {
    double t0 = 0;
    for (int round = 0; round < rounds(); ++round) {
      if (round == o_.warmup) t0 = Seconds();
      for (int k = 0; k < o_.servers; ++k) {
        const Slice s = SliceOf(count_, o_.servers, k);
        params.Get(params_.data() + s.begin, s.size * sizeof(float), num_workers_ + k, 0);
      }
      for (int k = 0; k < o_.servers; ++k) {
        const Slice s = SliceOf(count_, o_.servers, k);
        sums.AccumulateFloats(grads_.data() + s.begin, s.size, num_workers_ + k, 0);
      }
    }
    seconds = (Seconds() - t0) / o_.iters;
    *ok = *ok && PulledRight();
  }
  comm::Barrier(job_);  // the servers wait here, inside MPI, while the workers read and add
  if (serving) {
    std::copy_n(static_cast<const float*>(sums.local()), mine_.size, sums_.begin());
    *ok = *ok && SummedRight(static_cast<double>(num_workers_) * rounds());
  }
  return SlowestWorker(seconds);
}

double Run::Allreduce(bool* ok) {
  double seconds = 0;
  if (workers_ != nullptr) {
    std::vector<float> data(count_);
    double t0 = 0;
    for (int round = 0; round < rounds(); ++round) {
      if (round == o_.warmup) t0 = Seconds();
      std::fill(data.begin(), data.end(), 1.0f);
      comm::Allreduce(*workers_, data.data(), count_, {.algorithm = o_.algorithm});
    }
    seconds = (Seconds() - t0) / o_.iters;
    *ok = *ok && std::all_of(data.begin(), data.end(),
                             [&](float v) { return v == static_cast<float>(workers_->size()); });
  }
  return SlowestWorker(seconds);
}

int RunPsTransport(const std::vector<std::string>& args) {
  comm::Communicator job(comm::Group::kWorld, {.discover_topology = false});
  Options o;
  if (!ParsedOnEveryRank(job, [&] { o = Parse(args, job.size()); })) {
    return ExitCodeFor(ErrorCode::kInvalidArgument);
  }
  if (o.help) {
    if (job.rank() == 0) std::fputs(kUsage, stdout);
    return 0;
  }
  const int num_workers = job.size() - o.servers;
  std::unique_ptr<comm::Communicator> workers =
      job.Split(job.rank() < num_workers ? 0 : 1, job.rank(), {.discover_topology = true});
  if (job.rank() >= num_workers) workers.reset();
  bool all_ok = true;
  if (job.rank() == 0) {
    std::printf(
        "# ps-transport: %d worker(s), %d server(s); pull + push of each size per round, "
        "%d rounds x %d repeats (median)\n",
        num_workers, o.servers, o.iters, o.repeats);
    std::printf("%10s %6s %11s %9s %6s\n", "bytes", "mode", "round_us", "GB/s/wkr", "check");
  }
  for (size_t bytes : o.sizes) {
    const size_t count = std::max<size_t>(bytes / sizeof(float), static_cast<size_t>(o.servers));
    Run run(job, workers.get(), o, count);
    struct Mode {
      const char* name;
      double (Run::*measure)(bool*);
    };
    for (const Mode& m :
         {Mode{"p2p", &Run::P2p}, Mode{"rma", &Run::Rma}, Mode{"allreduce", &Run::Allreduce}}) {
      std::vector<double> times;
      bool ok = true;
      for (int r = 0; r < o.repeats; ++r) times.push_back((run.*m.measure)(&ok));
      ok = comm::AllreduceInt64(job, ok ? 1 : 0, comm::ReduceOp::kMin) == 1;
      all_ok = all_ok && ok;
      const double t = Median(times), b = static_cast<double>(count * sizeof(float));
      const bool reduce = std::string(m.name) == "allreduce";
      // A worker moves the size twice per round (pull and push); an all-reduce's bus carries
      // 2 (W - 1) / W of it per rank.
      const double gbs =
          reduce ? (num_workers > 1 ? b / t * 2.0 * (num_workers - 1) / num_workers : b / t)
                 : 2.0 * b / t;
      if (job.rank() != 0) continue;
      std::printf("%10zu %6s %11.1f %9.3f %6s\n", count * sizeof(float), reduce ? "ar" : m.name,
                  t * 1e6, gbs / 1e9, ok ? "ok" : "FAIL");
      if (o.json) {
        nlohmann::json j = {{"bench", "ps-transport"},
                            {"bytes", count * sizeof(float)},
                            {"mode", m.name},
                            {"workers", num_workers},
                            {"servers", o.servers},
                            {"round_us", t * 1e6},
                            {reduce ? "busbw_gbs" : "per_worker_gbs", gbs / 1e9},
                            {"ok", ok}};
        std::printf("%s\n", j.dump().c_str());
      }
    }
  }
  if (job.rank() == 0) {
    std::printf("# ar = the workers' all-reduce of the same bytes; its GB/s is bus bandwidth\n");
  }
  return all_ok ? 0 : 1;
}

}  // namespace

SHARDFLOW_BENCH("ps-transport",
                "parameter-server pull + push: point-to-point vs one-sided (RMA), beside the "
                "workers' all-reduce",
                RunPsTransport);

}  // namespace shardflow::bench
