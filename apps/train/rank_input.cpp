#include "apps/train/rank_input.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <numeric>
#include <sstream>

#include "comm/collectives.hpp"
#include "core/error.hpp"
#include "core/fault_injection.hpp"
#include "io/pipeline/data_options.hpp"

namespace shardflow::train {

int64_t EpochMap::EpochOf(int64_t step) const {
  if (InRemainder(step)) return rem_epoch;
  if (step < reg_begin) return reg_epoch - 1;  // before the map's first step: not planned
  return reg_epoch + (step - reg_begin) / steps_per_epoch;
}

bool EpochMap::EpochEnd(int64_t step) const {
  if (InRemainder(step)) return step + 1 == rem_end;
  return step >= reg_begin && (step + 1 - reg_begin) % steps_per_epoch == 0;
}

int64_t EpochMap::PlannedSteps(int64_t epochs) const {
  return reg_begin + std::max<int64_t>(0, epochs - reg_epoch) * steps_per_epoch;
}

namespace {

constexpr char kMagic[4] = {'S', 'F', 'R', 'I'};
// 1: without the metrics' sums; 2: with them, before the pipeline's state.
constexpr uint32_t kVersion = 2;

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));  // x86-64: little-endian
}

template <typename T>
T Get(const std::string& in, size_t* pos) {
  if (*pos + sizeof(T) > in.size()) {
    throw Error(ErrorCode::kDataLoss, "a rank's saved input in the checkpoint is truncated");
  }
  T value;
  std::memcpy(&value, in.data() + *pos, sizeof(T));
  *pos += sizeof(T);
  return value;
}

}  // namespace

std::string EncodeSavedInput(const SavedInput& s) {
  std::string out(kMagic, 4);
  Put<uint32_t>(&out, kVersion);
  Put<int32_t>(&out, s.world);
  Put<int64_t>(&out, s.per_rank_batch);
  Put<double>(&out, s.lr_scale);
  for (int64_t v : {s.map.rem_begin, s.map.rem_end, s.map.rem_epoch, s.map.reg_begin,
                    s.map.reg_epoch, s.map.steps_per_epoch}) {
    Put<int64_t>(&out, v);
  }
  Put<uint64_t>(&out, s.remainder_ids.size());
  for (int64_t id : s.remainder_ids) Put<int64_t>(&out, id);
  Put<uint8_t>(&out, s.in_remainder ? 1 : 0);
  for (double v : s.epoch_sums) Put<double>(&out, v);
  for (double v : s.interval_sums) Put<double>(&out, v);
  Put<uint64_t>(&out, s.pipeline.size());
  out += s.pipeline;
  return out;
}

SavedInput DecodeSavedInput(const std::string& bytes) {
  SavedInput s;
  if (bytes.size() < 8 || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    s.pipeline = bytes;  // written before elastic resume: the iterator state alone
    return s;
  }
  size_t pos = 4;
  const uint32_t version = Get<uint32_t>(bytes, &pos);
  if (version != 1 && version != kVersion) {
    throw Error(ErrorCode::kDataLoss, "a rank's saved input has an unknown version");
  }
  s.world = Get<int32_t>(bytes, &pos);
  s.per_rank_batch = Get<int64_t>(bytes, &pos);
  s.lr_scale = Get<double>(bytes, &pos);
  int64_t* fields[] = {&s.map.rem_begin, &s.map.rem_end,   &s.map.rem_epoch,
                       &s.map.reg_begin, &s.map.reg_epoch, &s.map.steps_per_epoch};
  for (int64_t* f : fields) *f = Get<int64_t>(bytes, &pos);
  const uint64_t n = Get<uint64_t>(bytes, &pos);
  if (n > bytes.size() / sizeof(int64_t) || s.map.steps_per_epoch < 1 || s.world < 1) {
    throw Error(ErrorCode::kDataLoss, "a rank's saved input in the checkpoint is damaged");
  }
  s.remainder_ids.resize(n);
  for (uint64_t i = 0; i < n; ++i) s.remainder_ids[i] = Get<int64_t>(bytes, &pos);
  s.in_remainder = Get<uint8_t>(bytes, &pos) != 0;
  if (version >= 2) {
    for (double& v : s.epoch_sums) v = Get<double>(bytes, &pos);
    for (double& v : s.interval_sums) v = Get<double>(bytes, &pos);
  }
  const uint64_t length = Get<uint64_t>(bytes, &pos);
  if (length != bytes.size() - pos) {
    throw Error(ErrorCode::kDataLoss, "a rank's saved input in the checkpoint is truncated");
  }
  s.pipeline = bytes.substr(pos);
  return s;
}

RankInput::RankInput(const InputFactories& factories, pipeline::Dataset regular,
                     const EpochMap& map, int64_t from, std::vector<int64_t> ids,
                     int64_t per_rank_batch, std::shared_ptr<pipeline::StepLimitReport> report)
    : map_(map), per_rank_batch_(per_rank_batch), ids_(std::move(ids)) {
  // Repeated without a count: the loop stops at its planned steps, and the iterator state (which
  // names the pipeline's stages) stays valid when a finished run is resumed with more epochs.
  regular_ = std::make_unique<pipeline::PipelineIterator>(
      pipeline::LimitSteps(regular, map_.steps_per_epoch, report).Repeat().MakeIterator());
  if (map_.InRemainder(from)) {
    auto list = std::make_shared<const std::vector<int64_t>>(ids_);
    remainder_ = std::make_unique<pipeline::PipelineIterator>(
        pipeline::LimitSteps(factories.records(list, per_rank_batch_),
                             map_.rem_end - map_.rem_begin, nullptr)
            .MakeIterator());
  }
}

bool RankInput::Next(int64_t step, pipeline::Element* batch) {
  if (map_.InRemainder(step)) return remainder_ && remainder_->Next(batch);
  return regular_->Next(batch);
}

bool RankInput::Peek(int64_t step, pipeline::Element* batch) {
  if (map_.InRemainder(step)) return remainder_ && remainder_->Peek(batch);
  return regular_->Peek(batch);
}

void RankInput::Restore(int64_t step, bool in_remainder, const std::string& pipeline_state) {
  if (pipeline_state.empty()) return;
  if (in_remainder != map_.InRemainder(step) || (in_remainder && !remainder_)) {
    throw Error(ErrorCode::kDataLoss, "the checkpoint's input state does not match step " +
                                          std::to_string(step) + " of its epoch plan");
  }
  (in_remainder ? remainder_ : regular_)->RestoreState(pipeline_state);
}

SavedInput RankInput::Save(int64_t steps_done, int world, double lr_scale) {
  SavedInput s;
  s.world = world;
  s.per_rank_batch = per_rank_batch_;
  s.lr_scale = lr_scale;
  s.map = map_;
  s.in_remainder = map_.InRemainder(steps_done);
  if (s.in_remainder) s.remainder_ids = ids_;
  s.pipeline = (s.in_remainder ? remainder_ : regular_)->SaveState();
  return s;
}

namespace {

// The record ids old rank `rank` would still have trained in the epoch of `step`.
// `weights`: the old ranks' shares of the records (their batches when uneven; else empty).
std::vector<int64_t> OldRankRemaining(const InputFactories& f, const SavedInput& old, int rank,
                                      int64_t step, const std::vector<int64_t>& weights) {
  RankInput in(f, f.regular(rank, old.world, old.per_rank_batch, weights), old.map, step,
               old.remainder_ids, old.per_rank_batch, nullptr);
  in.Restore(step, old.in_remainder, old.pipeline);
  std::vector<int64_t> ids;
  pipeline::Element batch;
  for (int64_t s = step;; ++s) {
    if (!in.Next(s, &batch)) break;
    if (!batch.Has(pipeline::kRowIdFeature)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "the checkpoint's input batches carry no record ids: it cannot be resumed on "
                  "another rank count");
    }
    const Tensor& t = batch.Get(pipeline::kRowIdFeature);
    const int64_t* p = t.data<int64_t>();
    ids.insert(ids.end(), p, p + t.num_elements());
    if (old.map.EpochEnd(s)) break;
  }
  return ids;
}

// The rows of each rank in the last step of a remainder of `rows` (world <= rows <= sum of
// `batches`): an even split (as for equal batches), then what exceeds a rank's batch moved to
// the ranks with room, in rank order. Every rank gets at least one row.
std::vector<int64_t> LastStepRows(int64_t rows, const std::vector<int64_t>& batches) {
  const auto world = static_cast<int64_t>(batches.size());
  std::vector<int64_t> out(batches.size());
  int64_t excess = 0;
  for (int64_t j = 0; j < world; ++j) {
    const int64_t even = rows * (j + 1) / world - rows * j / world;
    out[j] = std::min(even, batches[j]);
    excess += even - out[j];
  }
  for (int64_t j = 0; j < world && excess > 0; ++j) {
    const int64_t take = std::min(excess, batches[j] - out[j]);
    out[j] += take;
    excess -= take;
  }
  return out;
}

// Deals `left` (the records of the interrupted epoch, in order) to the new ranks a step at a
// time: rank j's rows of a full step follow the batches of the ranks before it; the last step
// takes what is left (LastStepRows), unless that is less than a row per rank (left out).
// Fills out->ids (rank `rank`'s) and out->left_out; returns the steps.
int64_t DealRemainder(const std::vector<int64_t>& left, const std::vector<int64_t>& batches,
                      int rank, ElasticStart* out) {
  const auto n = static_cast<int64_t>(left.size());
  const auto world = static_cast<int64_t>(batches.size());
  const int64_t g = std::accumulate(batches.begin(), batches.end(), int64_t{0});
  int64_t steps = (n + g - 1) / g;
  const int64_t last = n - (steps - 1) * g;  // rows of the last step, 1..g
  if (steps > 0 && last < world) {           // not a row for every rank: left out
    out->left_out = last;
    --steps;
  }
  const int64_t full = std::max<int64_t>(0, steps - 1);
  const int64_t before = std::accumulate(batches.begin(), batches.begin() + rank, int64_t{0});
  const int64_t b = batches[static_cast<size_t>(rank)];
  for (int64_t t = 0; t < full; ++t) {
    const auto* at = left.data() + t * g + before;
    out->ids.insert(out->ids.end(), at, at + b);
  }
  if (steps > 0) {
    const std::vector<int64_t> rows = LastStepRows(n - out->left_out - full * g, batches);
    const int64_t begin = full * g + std::accumulate(rows.begin(), rows.begin() + rank, int64_t{0});
    out->ids.insert(out->ids.end(), left.begin() + begin,
                    left.begin() + begin + rows[static_cast<size_t>(rank)]);
  }
  return steps;
}

std::vector<int64_t> UnevenOnly(std::vector<int64_t> batches) {
  if (std::adjacent_find(batches.begin(), batches.end(), std::not_equal_to<>()) == batches.end()) {
    batches.clear();
  }
  return batches;
}

}  // namespace

ElasticStart PlanElasticResume(const InputFactories& f, const std::vector<std::string>& states,
                               int64_t step, int rank, const std::vector<int64_t>& batches,
                               bool global_batch, bool lr_scaled_by_ranks, int64_t steps_per_epoch,
                               comm::Communicator* comm, const char* unit) {
  const int world = static_cast<int>(batches.size());
  std::vector<SavedInput> old;
  for (const std::string& s : states) old.push_back(DecodeSavedInput(s));
  const int old_world = static_cast<int>(old.size());
  if (old.empty() || old[0].world != old_world) {
    throw Error(ErrorCode::kInvalidArgument,
                "the checkpoint was written by " + std::to_string(old_world) +
                    " ranks, before shardflow could resume on another rank count (this job has " +
                    std::to_string(world) + ")",
                {.hint = "run with -np " + std::to_string(old_world) +
                         ", or use --checkpoint.warm_start for weights only"});
  }
  const SavedInput& first = old[0];
  ElasticStart out;
  out.epoch_sums = first.epoch_sums;
  for (const SavedInput& o : old) {
    for (size_t i = 0; i < 3; ++i) out.interval_sums[i] += o.interval_sums[i];
  }
  std::vector<int64_t> old_batches;
  for (const SavedInput& o : old) old_batches.push_back(o.per_rank_batch);
  const std::vector<int64_t> old_weights = UnevenOnly(old_batches);
  const auto old_global =
      static_cast<double>(std::accumulate(old_batches.begin(), old_batches.end(), int64_t{0}));
  const auto new_global =
      static_cast<double>(std::accumulate(batches.begin(), batches.end(), int64_t{0}));
  // The effective rate follows the global batch; a base rate that has the rank count in it
  // (lr_scaling = linear) changed by world / old_world already.
  out.lr_scale = first.lr_scale * (global_batch ? 1.0 : new_global / old_global) *
                 (lr_scaled_by_ranks ? static_cast<double>(old_world) / world : 1.0);
  out.map.steps_per_epoch = steps_per_epoch;
  const EpochMap& m = first.map;
  std::ostringstream line;
  line << "elastic resume: " << old_world << " -> " << world << " " << unit << " at step " << step
       << ", per-rank batch " << BatchText(old_batches) << " -> " << BatchText(batches)
       << " (global " << old_global << " -> " << new_global << ")";
  if (step == 0 || m.EpochEnd(step - 1)) {  // at an epoch boundary: a fresh plan from here
    out.map.reg_begin = out.map.rem_begin = out.map.rem_end = step;
    out.map.reg_epoch = step == 0 ? 0 : m.EpochOf(step - 1) + 1;
    line << "; at the start of epoch " << out.map.reg_epoch;
  } else {
    // New rank j replays old ranks j, j + world, ...; the lists, in that order by j, are shared.
    std::vector<int64_t> left;
    for (int j = comm ? rank : 0; j < (comm ? rank + 1 : world); ++j) {
      for (int r = j; r < old_world; r += world) {
        const std::vector<int64_t> ids = OldRankRemaining(f, old[r], r, step, old_weights);
        left.insert(left.end(), ids.begin(), ids.end());
      }
    }
    if (comm) {
      left = comm::GatherConcat(*comm, left.data(), left.size());
      int64_t count = static_cast<int64_t>(left.size());
      comm::BroadcastBytes(*comm, &count, sizeof count);
      left.resize(static_cast<size_t>(count));
      comm::BroadcastBytes(*comm, left.data(), left.size() * sizeof(int64_t));
    }
    const auto n = static_cast<int64_t>(left.size());
    const int64_t steps = DealRemainder(left, batches, rank, &out);
    out.map.rem_begin = step;
    out.map.rem_end = step + steps;
    out.map.rem_epoch = m.EpochOf(step);
    out.map.reg_begin = out.map.rem_end;
    out.map.reg_epoch = out.map.rem_epoch + 1;
    line << "; epoch " << out.map.rem_epoch << " continues with the " << n
         << " records its ranks had left, in " << steps << " steps";
    if (out.left_out > 0) line << " (" << out.left_out << " left out: fewer than one per rank)";
  }
  if (out.lr_scale != first.lr_scale) {
    line << "; learning rate x" << out.lr_scale / first.lr_scale
         << (global_batch ? " (lr_scaling = linear, but the global batch is kept)"
                          : " (per-rank batch semantics: the global batch changed)");
  }
  out.summary = line.str();
  return out;
}

std::string BatchText(const std::vector<int64_t>& batches) {
  if (batches.empty()) return "0";
  const auto [lo, hi] = std::minmax_element(batches.begin(), batches.end());
  return *lo == *hi ? std::to_string(*lo) : std::to_string(*lo) + ".." + std::to_string(*hi);
}

void LogRowIds(int rank, int64_t epoch, int64_t step, const pipeline::Element& batch) {
  if (!batch.Has(pipeline::kRowIdFeature)) return;
  std::ostringstream line;
  line << epoch << ' ' << step << ' ';
  const Tensor& t = batch.Get(pipeline::kRowIdFeature);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    line << (i ? "," : "") << t.data<int64_t>()[i];
  }
  fault::At(fault::Point::kBatchTaken, {.rank = rank, .index = step, .line = line.str()});
}

}  // namespace shardflow::train
