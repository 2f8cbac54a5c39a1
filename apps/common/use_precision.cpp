#include "apps/common/use_precision.hpp"

#include "core/logging.hpp"

namespace shardflow::apps {

ChosenPrecision UsePrecision(const std::string& want, Device device, bool say) {
  const ChosenPrecision chosen = ChoosePrecision(want, device, "train.precision");
  InstallPrecision(device, chosen.name);
  if (say && !chosen.note.empty()) SF_LOG(Info) << chosen.note;
  if (say && chosen.name != "fp32") {
    SF_LOG(Info) << "precision " << chosen.name << ": matrix products on " << chosen.kernels;
  }
  return chosen;
}

}  // namespace shardflow::apps
