#include "apps/train/run_checks.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "apps/train/trainer_options.hpp"
#include "core/logging.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/list_files.hpp"

namespace shardflow::train {
namespace {

// The value of `key` ("train.precision") in a resolved config's text; "" when absent.
std::string ResolvedValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line, section;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    const size_t eq = line.find(" =");
    if (eq == std::string::npos || section + "." + line.substr(0, eq) != key) continue;
    const size_t start = line.find_first_not_of(' ', eq + 2);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

// A checkpoint of another precision loads (it is float in every precision): said once.
void SayOtherPrecision(const std::string& stored_text, const std::string& current_text,
                       const std::string& path) {
  const std::string then = ResolvedValue(stored_text, "train.precision");
  const std::string now = ResolvedValue(current_text, "train.precision");
  const std::string was = then.empty() ? "fp32" : then, is = now.empty() ? "fp32" : now;
  if (was == is) return;
  SF_LOG0(Info) << path << " was written with train.precision = " << was
                << "; it loads into this run's train.precision = " << is
                << " (checkpoints hold float weights and optimizer state in every precision)";
}

// Whether the checkpoint `info` (read from `path`) fits the model and optimizer of `o`:
// the same parameters by name and whole shape, whatever grid wrote it or will read it.
void CheckFits(const CheckpointInfo& info, const std::string& path, const TrainerOptions& o) {
  std::map<std::string, Shape> in_file(info.params.begin(), info.params.end());
  for (const LayerInfo& layer : DescribeLayers(o.model_spec, o.input_shape, o.model)) {
    for (const auto& [name, shape] : layer.params) {
      const auto it = in_file.find(name);
      if (it == in_file.end()) {
        throw Error(ErrorCode::kInvalidArgument,
                    "parameter " + name + " of the model is not in the checkpoint",
                    {.file = path, .hint = "resume with the model that wrote it"});
      }
      if (it->second != shape) {
        throw Error(ErrorCode::kInvalidArgument,
                    "parameter " + name + " has shape " + ShapeToString(shape) +
                        " in the model but " + ShapeToString(it->second) + " in the checkpoint",
                    {.file = path, .hint = "resume with the model that wrote it"});
      }
      in_file.erase(it);
    }
  }
  if (!in_file.empty()) {
    throw Error(ErrorCode::kInvalidArgument,
                "parameter " + in_file.begin()->first + " of the checkpoint is not in the model",
                {.file = path, .hint = "resume with the model that wrote it"});
  }
  if (!info.optimizer.empty() && info.optimizer != o.optimizer.name) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "the checkpoint holds " + info.optimizer + " state, the run uses " + o.optimizer.name,
        {.file = path, .key = "train.optimizer"});
  }
}

// A folder among the data files would be read as a damaged record file ("truncated record
// header", exit 3): a usage error naming it and the key instead (images read folders through
// data.root, not data.files).
void CheckNotFolders(const pipeline::InputSpec& spec, const std::string& key) {
  if (spec.data.format == "images") return;
  for (const std::string& f : pipeline::ListFiles(spec.data.files)) {
    if (std::filesystem::is_directory(f)) {
      throw Error(ErrorCode::kInvalidArgument, "a data file is a directory",
                  {.file = f,
                   .key = key,
                   .hint = "give the files in it, e.g. " + f + "/*." + spec.data.format});
    }
  }
}

}  // namespace

// --resume without a checkpoint to resume from, or with one that does not fit the model or the
// optimizer, is a usage error found in the parse phase, where every rank hits it alike and one
// line says so (--resume=auto starts fresh when there is none). Only the newest readable file's
// metadata is read (no tensor data, no model built: it may not fit one rank); the strategy
// loads the checkpoint, each rank its part.
void CheckResumable(const TrainerOptions& o) {
  if (!o.resume) return;
  const bool none =
      !std::filesystem::is_directory(o.checkpoint.dir) || ListCheckpoints(o.checkpoint).empty();
  if (none && o.resume_if_possible) return;
  if (!none) {
    const std::vector<std::string> files = ListCheckpoints(o.checkpoint);
    for (auto it = files.rbegin(); it != files.rend(); ++it) {
      CheckpointInfo info;
      try {
        info = ReadCheckpointInfo(*it);
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kDataLoss) continue;  // damaged: loading skips it too
        throw;
      }
      CheckFits(info, *it, o);
      if (!CheckSameRun(info.config_text, o.config_text, *it)) {
        SF_LOG0(Warn) << *it << " predates run identity hashes: not checked that it was written "
                      << "with this config's model and data";
      }
      SayOtherPrecision(info.config_text, o.config_text, *it);
      return;
    }
    if (o.resume_if_possible) return;
  }
  throw Error(ErrorCode::kNotFound, "--resume: no checkpoint to resume from",
              {.file = o.checkpoint.dir,
               .hint = "--resume=auto starts fresh when there is none; without --resume the "
                       "run starts fresh"});
}

// A fresh run (no --resume) into an OUTPUT that holds another run's checkpoints or metrics would
// mix the two: same-step checkpoints overwritten, keep_last deleting the other's, a later
// --resume continuing the wrong one, metrics.jsonl interleaved. Refused unless --overwrite.
void CheckFreshOutput(const TrainerOptions& o, bool overwrite) {
  if (overwrite && o.resume) {
    throw Error(ErrorCode::kInvalidArgument, "--overwrite and --resume exclude each other",
                {.key = "--overwrite"});
  }
  if (o.resume || overwrite) return;
  const bool checkpoints =
      std::filesystem::is_directory(o.checkpoint.dir) && !ListCheckpoints(o.checkpoint).empty();
  const bool metrics = std::filesystem::exists(o.output_dir + "/metrics.jsonl");
  if (!checkpoints && !metrics) return;
  throw Error(ErrorCode::kInvalidArgument,
              std::string("the output already holds a run (") +
                  (checkpoints ? "checkpoints" : "metrics.jsonl") +
                  "); a fresh run would mix with it",
              {.file = checkpoints ? o.checkpoint.dir : o.output_dir,
               .hint = "--resume continues it, --overwrite clears it first, or choose another "
                       "--output"});
}

// --overwrite, on rank 0 before anything is written: the previous run's checkpoints,
// metrics.jsonl, summary.json and the TensorBoard events (tb/) go, logged (unfinished .tmp files go
// on every start).
void ClearPreviousRun(const TrainerOptions& o) {
  namespace fs = std::filesystem;
  int removed = 0;
  if (fs::is_directory(o.checkpoint.dir)) {
    for (const std::string& f : ListCheckpoints(o.checkpoint)) removed += fs::remove(f) ? 1 : 0;
  }
  const bool metrics = fs::remove(o.output_dir + "/metrics.jsonl");
  fs::remove(o.output_dir + "/summary.json");
  fs::remove_all(o.output_dir + "/tb");
  if (removed > 0 || metrics) {
    SF_LOG(Warn) << "--overwrite: removed " << removed << " checkpoints of the previous run from "
                 << o.checkpoint.dir << (metrics ? " and its metrics.jsonl" : "");
  }
}

// checkpoint.dir must be a folder this rank can create files in: found at start-up, not at the
// first checkpoint after all of training. Every rank checks (they share the folder or not);
// a probe file named by rank and pid is created and removed.
void CheckCheckpointDir(const TrainerOptions& o, int rank) {
  namespace fs = std::filesystem;
  const std::string& dir = o.checkpoint.dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!ec && !fs::is_directory(dir, ec)) ec = std::make_error_code(std::errc::not_a_directory);
  std::string what = "cannot create the checkpoint folder";
  if (!ec) {
    const std::string probe =
        dir + "/.write-test." + std::to_string(rank) + "." + std::to_string(::getpid());
    if (std::FILE* f = std::fopen(probe.c_str(), "w"); f != nullptr) {
      std::fclose(f);
      fs::remove(probe, ec);
      return;
    }
    ec = std::error_code(errno, std::generic_category());
    what = "cannot write in the checkpoint folder";
  }
  // An I/O error (exit 1) naming the errno, as every refused path is (README, exit codes).
  throw Error(ErrorCode::kIo,
              what + ": " + ec.message() + " (errno " + std::to_string(ec.value()) + ")",
              {.file = dir,
               .key = "checkpoint.dir",
               .hint = "set checkpoint.dir (or --output) to a writable folder"});
}

// Rank 0, before training: checkpoint files a killed writer left unfinished
// (NAME.h5.tmp.PID) are removed, logged. No writer of another run can be at work in the folder
// (a fresh run into a used OUTPUT is refused).
void SetAsideUnfinishedRun(const TrainerOptions& o) {
  namespace fs = std::filesystem;
  if (!o.resume_if_possible || o.output_dir.empty()) return;
  if (fs::is_directory(o.checkpoint.dir) && !ListCheckpoints(o.checkpoint).empty()) return;
  std::vector<std::string> logs;
  for (const char* name : {"metrics.jsonl", "summary.json", "tb"}) {
    if (fs::exists(o.output_dir + "/" + name)) logs.push_back(name);
  }
  if (logs.empty()) return;
  std::string aside;
  for (int n = 1; aside.empty() || fs::exists(aside); ++n) {
    aside = o.output_dir + "/unfinished-run-" + std::to_string(n);
  }
  fs::create_directories(aside);
  std::string moved;
  for (const std::string& name : logs) {
    fs::rename(o.output_dir + "/" + name, aside + "/" + name);
    moved += (moved.empty() ? "" : ", ") + name;
  }
  SF_LOG(Warn) << "--resume=auto: no checkpoint to resume from, so this run starts fresh; the "
               << "unfinished run's " << moved << " set aside in " << aside;
}

void RemoveUnfinishedCheckpoints(const TrainerOptions& o) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(o.checkpoint.dir)) return;
  std::vector<fs::path> unfinished;
  for (const fs::directory_entry& e : fs::directory_iterator(o.checkpoint.dir)) {
    if (e.path().filename().string().find(".h5.tmp.") != std::string::npos) {
      unfinished.push_back(e.path());
    }
  }
  for (const fs::path& p : unfinished) {
    fs::remove(p);
    SF_LOG(Warn) << "removed " << p.string() << ", a checkpoint its killed writer left unfinished";
  }
}

// The inputs, in the parse phase: patterns that match nothing and folders among the files are
// usage errors reported here, once, rather than by every rank's pipeline at once; a label
// outside the model's classes will name its file and record (checked per example).
void CheckInputs(TrainerOptions* options) {
  TrainerOptions& o = *options;
  pipeline::CheckInputFilesMatch(o.train_input, "data.files");
  CheckNotFolders(o.train_input, "data.files");
  if (!o.eval_input.data.files.empty()) {
    pipeline::CheckFilesMatch(o.eval_input.data.files, "eval.files");
    CheckNotFolders(o.eval_input, "eval.files");
  }
  // An assembled input (data.assemble) must be what the model reads; its layout is logged.
  const std::string layout =
      apps::CheckAssembledInput(o.train_input, o.input_feature, o.input_shape);
  if (!layout.empty()) SF_LOG0(Info) << "[data] assembled input: " << layout;
  if (!o.eval_input.data.files.empty()) {
    apps::CheckAssembledInput(o.eval_input, o.input_feature, o.input_shape);
  }
  apps::CheckTokenizedInput(o.train_input, o.input_feature, o.input_shape);
  if (o.shorter_sequences && o.model_parallel.grid.stages > 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "pad_to = " + o.train_input.text.pad_to +
                    " makes batches shorter than the model's context, and pipeline stages "
                    "exchange activations of the context's length",
                {.key = "data.pad_to", .hint = "pad_to = max with dist.pipeline_stages > 1"});
  }
  if (!o.eval_input.data.files.empty()) {
    apps::CheckTokenizedInput(o.eval_input, o.input_feature, o.input_shape);
  }
  // Only what the model reads reaches the batch: a column or feature nothing reads (a string of
  // varying length, say) is dropped after decoding.
  o.train_input.keep_features = {o.input_feature};
  if (o.task == apps::Task::kClassify) o.train_input.keep_features.push_back(o.label_feature);
  o.eval_input.keep_features = o.train_input.keep_features;
  if (o.task == apps::Task::kClassify) {
    const Shape out = DescribeLayers(o.model_spec, o.input_shape, o.model).back().output_shape;
    o.train_input.check_example = apps::LabelRangeCheck(o.label_feature, out.back());
    o.eval_input.check_example = o.train_input.check_example;
  }
}

}  // namespace shardflow::train
