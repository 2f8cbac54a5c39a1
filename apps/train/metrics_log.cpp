#include "apps/train/metrics_log.hpp"

#include <filesystem>

#include "core/error.hpp"
#include "core/logging.hpp"

namespace shardflow::train {

MetricsLog::MetricsLog(const std::string& path, int64_t resumed_step) {
  if (!path.empty()) {
    if (resumed_step > 0) DropLinesAfter(path, resumed_step);
    out_.open(path, std::ios::app);
    if (!out_) throw Error(ErrorCode::kIo, "cannot open metrics log", {.file = path});
  }
}

void MetricsLog::DropLinesAfter(const std::string& path, int64_t step) {
  std::ifstream in(path);
  if (!in) return;
  std::string kept, line;
  int64_t dropped = 0;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
        j["step"].get<int64_t>() > step) {
      ++dropped;
      continue;
    }
    kept += line + '\n';
  }
  in.close();
  if (dropped == 0) return;
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp, std::ios::trunc) << kept;
  std::filesystem::rename(tmp, path);
  SF_LOG(Warn) << "--resume at step " << step << ": dropped " << dropped << " lines of " << path
               << " past it (written after that checkpoint by the run that stopped)";
}

}  // namespace shardflow::train
