#include "core/binding.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace shardflow {

Binding CurrentBinding(int rank, int local_rank) {
  Binding b;
  b.rank = rank;
  b.local_rank = local_rank;
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  b.host = host;
  const char* gpu = std::getenv("CUDA_VISIBLE_DEVICES");
  b.gpu = (gpu != nullptr && *gpu != '\0') ? gpu : "-";
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) b.cores.push_back(c);
    }
  }
  return b;
}

// Wire form: "rank\thost\tlocal_rank\tgpu\tcores" (host names and GPU lists hold no tabs).
std::string SerializeBinding(const Binding& b) {
  std::ostringstream out;
  out << b.rank << '\t' << b.host << '\t' << b.local_rank << '\t' << b.gpu << '\t'
      << FormatCoreList(b.cores);
  return out.str();
}

namespace {

std::vector<int> ParseCoreList(const std::string& text) {
  std::vector<int> cores;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) continue;
    const auto dash = part.find('-');
    const int lo = std::atoi(part.substr(0, dash).c_str());
    const int hi = dash == std::string::npos ? lo : std::atoi(part.substr(dash + 1).c_str());
    for (int c = lo; c <= hi; ++c) cores.push_back(c);
  }
  return cores;
}

}  // namespace

Binding ParseBinding(const std::string& text) {
  std::istringstream in(text);
  std::string rank, local_rank, cores;
  Binding b;
  std::getline(in, rank, '\t');
  std::getline(in, b.host, '\t');
  std::getline(in, local_rank, '\t');
  std::getline(in, b.gpu, '\t');
  std::getline(in, cores, '\t');
  b.rank = std::atoi(rank.c_str());
  b.local_rank = std::atoi(local_rank.c_str());
  b.cores = ParseCoreList(cores);
  return b;
}

std::string FormatCoreList(const std::vector<int>& cores) {
  std::vector<int> sorted = cores;
  std::sort(sorted.begin(), sorted.end());
  std::ostringstream out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (i > 0) out << ',';
    out << sorted[i];
    if (j > i) out << '-' << sorted[j];
    i = j + 1;
  }
  return out.str();
}

std::string FormatBindingTable(const std::vector<Binding>& bindings) {
  size_t host_width = 4;
  for (const auto& b : bindings) host_width = std::max(host_width, b.host.size());
  std::ostringstream out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-5s %-*s %-5s %-8s %s\n", "rank",
                static_cast<int>(host_width), "host", "local", "gpu", "cores");
  out << line;
  for (const auto& b : bindings) {
    std::snprintf(line, sizeof(line), "%-5d %-*s %-5d %-8s %s\n", b.rank,
                  static_cast<int>(host_width), b.host.c_str(), b.local_rank, b.gpu.c_str(),
                  FormatCoreList(b.cores).c_str());
    out << line;
  }
  return out.str();
}

std::vector<std::string> FindBindingConflicts(const std::vector<Binding>& bindings) {
  std::vector<std::string> conflicts;
  std::map<std::pair<std::string, std::string>, int> gpu_owner;
  std::map<std::pair<std::string, int>, int> core_owner;
  for (const auto& b : bindings) {
    if (b.gpu != "-") {
      auto [it, inserted] = gpu_owner.emplace(std::make_pair(b.host, b.gpu), b.rank);
      if (!inserted) {
        conflicts.push_back("ranks " + std::to_string(it->second) + " and " +
                            std::to_string(b.rank) + " share GPU " + b.gpu + " on " + b.host);
      }
    }
    std::set<int> reported;  // one message per pair of ranks
    for (int c : b.cores) {
      auto [it, inserted] = core_owner.emplace(std::make_pair(b.host, c), b.rank);
      if (!inserted && reported.insert(it->second).second) {
        conflicts.push_back("ranks " + std::to_string(it->second) + " and " +
                            std::to_string(b.rank) + " share core " + std::to_string(c) + " on " +
                            b.host);
      }
    }
  }
  return conflicts;
}

}  // namespace shardflow
