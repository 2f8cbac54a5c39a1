// shardflow-serve-load: a closed-loop HTTP load client for benchmarking shardflow-serve on
// loopback (bench/serve.sh). C connections (one thread and one keep-alive connection each) send
// the same POST body back to back for --seconds after --warmup seconds; every answer's status
// is counted, and every latency (send to full answer) of the measured window is kept, so the
// percentiles are exact, not bucketed.
//   shardflow-serve-load --port P --body FILE [--host H] [--path /v1/models/default:predict]
//                        [--connections C] [--seconds S] [--warmup S]
// Prints one line:
//   connections C: N requests in S s: Q requests/s, p50 A ms, p90 B ms, p99 C ms, non-200 E
// Exit status 1 when any answer was not 200 or a connection failed.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string path = "/v1/models/default:predict";
  std::string body_file;
  int connections = 1;
  double seconds = 5;
  double warmup = 1;
};

Options Parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--host") {
      o.host = value;
    } else if (flag == "--port") {
      o.port = std::atoi(value.c_str());
    } else if (flag == "--path") {
      o.path = value;
    } else if (flag == "--body") {
      o.body_file = value;
    } else if (flag == "--connections") {
      o.connections = std::atoi(value.c_str());
    } else if (flag == "--seconds") {
      o.seconds = std::atof(value.c_str());
    } else if (flag == "--warmup") {
      o.warmup = std::atof(value.c_str());
    } else {
      std::fprintf(stderr, "error: unknown flag %s\n", flag.c_str());
      std::exit(2);
    }
  }
  if (o.port <= 0 || o.body_file.empty() || o.connections <= 0 || o.seconds <= 0) {
    std::fprintf(stderr,
                 "usage: shardflow-serve-load --port P --body FILE [--connections C] "
                 "[--seconds S] [--warmup S] [--host H] [--path PATH]\n");
    std::exit(2);
  }
  return o;
}

struct ThreadStats {
  std::vector<double> latencies_ms;  // measured window only
  int64_t non_ok = 0;
  std::string first_error;
};

}  // namespace

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  const Options o = Parse(argc, argv);
  std::ifstream in(o.body_file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "error: cannot read --body %s\n", o.body_file.c_str());
    return 2;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string body = ss.str();
  const Clock::time_point start = Clock::now();
  const auto measure_from = start + std::chrono::duration<double>(o.warmup);
  const auto end = measure_from + std::chrono::duration<double>(o.seconds);
  std::vector<ThreadStats> stats(static_cast<size_t>(o.connections));
  std::vector<std::thread> threads;
  for (int c = 0; c < o.connections; ++c) {
    threads.emplace_back([&, c] {
      ThreadStats& s = stats[static_cast<size_t>(c)];
      httplib::Client client(o.host, o.port);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(60, 0);
      for (;;) {
        const Clock::time_point t0 = Clock::now();
        if (t0 >= end) break;
        const auto res = client.Post(o.path, body, "application/json");
        const Clock::time_point t1 = Clock::now();
        const bool ok = res && res->status == 200;
        if (t0 >= measure_from && t1 <= end) {
          s.latencies_ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          if (!ok) ++s.non_ok;
        }
        if (!ok && s.first_error.empty()) {
          s.first_error = res ? "status " + std::to_string(res->status) + ": " + res->body
                              : "connection error " + httplib::to_string(res.error());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::vector<double> all;
  int64_t non_ok = 0;
  std::string first_error;
  for (const ThreadStats& s : stats) {
    all.insert(all.end(), s.latencies_ms.begin(), s.latencies_ms.end());
    non_ok += s.non_ok;
    if (first_error.empty()) first_error = s.first_error;
  }
  std::sort(all.begin(), all.end());
  const auto pct = [&all](double q) {
    if (all.empty()) return 0.0;
    const size_t i = static_cast<size_t>(q * static_cast<double>(all.size() - 1) + 0.5);
    return all[std::min(i, all.size() - 1)];
  };
  std::printf(
      "connections %d: %zu requests in %.1f s: %.1f requests/s, p50 %.3f ms, p90 %.3f ms, p99 "
      "%.3f ms, non-200 %lld\n",
      o.connections, all.size(), o.seconds, static_cast<double>(all.size()) / o.seconds, pct(0.5),
      pct(0.9), pct(0.99), static_cast<long long>(non_ok));
  if (!first_error.empty()) {
    std::fprintf(stderr, "first error: %s\n", first_error.substr(0, 300).c_str());
    return 1;
  }
  return 0;
}
