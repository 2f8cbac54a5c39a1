#include "apps/trace/merge.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.hpp"
#include "core/trace.hpp"

namespace shardflow::trace_tool {

std::string Usage() {
  return "usage: shardflow-trace merge OUTPUT [--out FILE]\n"
         "  Merges the per-rank Chrome traces of a shardflow-train run (OUTPUT/trace.rankN.json,\n"
         "  written with [log] trace = true) into one trace (default OUTPUT/trace.json) that\n"
         "  loads in ui.perfetto.dev and chrome://tracing. Ranks are put on rank 0's clock with\n"
         "  the offsets the trainer measured by MPI ping-pong at the start and end of the run\n"
         "  (drift between them corrected); files without them are aligned by wall clock.\n";
}

MergeOptions ParseArgs(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "merge") {
    throw Error(ErrorCode::kInvalidArgument,
                "expected the command 'merge'" +
                    (args.empty() ? std::string() : ", got '" + args[0] + "'"));
  }
  MergeOptions o;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--out" && i + 1 < args.size()) {
      o.out = args[++i];
    } else if (args[i].rfind("--out=", 0) == 0) {
      o.out = args[i].substr(6);
    } else if (args[i].rfind("--", 0) != 0 && o.run_dir.empty()) {
      o.run_dir = args[i];
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unexpected argument '" + args[i] + "'");
    }
  }
  if (o.run_dir.empty()) throw Error(ErrorCode::kInvalidArgument, "missing OUTPUT (a run folder)");
  return o;
}

std::vector<std::string> RankTraceFiles(const std::string& run_dir) {
  namespace fs = std::filesystem;
  const std::regex name(R"(trace\.rank([0-9]+)\.json)");
  std::vector<std::pair<int, std::string>> found;
  std::error_code ec;
  if (fs::is_directory(run_dir, ec)) {
    for (const fs::directory_entry& e : fs::directory_iterator(run_dir)) {
      std::smatch m;
      const std::string file = e.path().filename().string();
      if (std::regex_match(file, m, name)) found.emplace_back(std::stoi(m[1]), e.path().string());
    }
  }
  if (found.empty()) {
    throw Error(ErrorCode::kNotFound, "no trace.rankN.json files",
                {.file = run_dir, .hint = "train with --log.trace=true to write them"});
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> files;
  for (auto& [rank, path] : found) files.push_back(std::move(path));
  return files;
}

int RunMerge(const MergeOptions& options, std::ostream& out) {
  const std::vector<std::string> inputs = RankTraceFiles(options.run_dir);
  const std::string target = options.out.empty() ? options.run_dir + "/trace.json" : options.out;
  MergeTraceFiles(inputs, target);
  std::ifstream in(target);
  const nlohmann::json merged = nlohmann::json::parse(in);
  const nlohmann::json& other = merged["otherData"];
  out << "merged " << inputs.size() << " rank traces (" << merged["traceEvents"].size()
      << " events) into " << target << "; clock: " << other["clock"].get<std::string>();
  if (other.contains("clock_error_us")) {
    out << ", error <= " << other["clock_error_us"].get<double>() << " us";
  }
  out << "\n";
  return 0;
}

}  // namespace shardflow::trace_tool
