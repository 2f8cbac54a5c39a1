// Where the time of a training run went, and what to do about it.
//
// A training step on one rank is split into: waiting for the input pipeline (the consumer
// blocked on the next batch), computing (forward, backward, optimizer), and communicating (time
// the step was blocked on gradient all-reduces that did not overlap with backprop). Each rank
// measures its own totals; the app reduces them (max over ranks for wall time, mean for the
// parts) and calls Diagnose() on rank 0.
//
// The verdict names the bound resource and the knob to turn, e.g.
//   "input-bound: 41% of step time waiting for data; raise data.parallel_calls (now 1), or set
//    data.cache = memory"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/straggler.hpp"

namespace shardflow {

struct StepTimeTotals {
  double wall_s = 0;        // whole training loop
  double input_wait_s = 0;  // blocked on the pipeline
  double compute_s = 0;     // forward + backward + update
  double comm_s = 0;        // blocked on communication (not hidden behind backprop)

  double InputFraction() const;
  double ComputeFraction() const;
  double CommFraction() const;
  // The rest of the wall time: evaluation, checkpoints, logging, and ranks waiting at the end
  // for the slowest (the parts are means over ranks, the wall time the longest rank's).
  double OtherFraction() const;
};

// What a strategy's communication is, in the report's words and advice (the strategy says:
// Strategy::comm_profile). The defaults describe an all-reduce of gradients whose buckets are
// not known.
struct CommProfile {
  std::string waits_for = "the all-reduce";        // what a straggler is last to
  std::string blocked_on = "gradient all-reduce";  // what communication time was spent on
  // Gradient buckets a step reduces (dist.bucket_mb and dist.overlap shape them), and the
  // largest; -1: not known (the advice names the knobs); 0: the strategy has none.
  int buckets = -1;
  double largest_bucket_mb = 0;
  std::string knob;  // the strategy's own advice for a communication-bound run, or ""
};

// What the verdict may suggest: the current values of the knobs it can name.
struct TuningContext {
  int parallel_calls = 1;
  int parallel_reads = 1;
  int prefetch = 1;
  bool cache_enabled = false;
  double bucket_mb = 25;
  bool overlap = true;
  int threads = 1;
  int ranks = 1;
  // What "auto" resolved to, shown beside it ("auto = 1"); 0: not known, shown as "auto".
  int parallel_reads_used = 0;
  // The cores of this node and the ranks placed on it: when ranks x threads already fill the
  // cores, the advice is to add nodes, not threads. 0 cores: not known.
  int cores = 0;
  int local_ranks = 1;
  // The CPUs this rank is bound to (0: not known). Fewer than `threads` makes the threads
  // time-slice, and the advice says how to unbind.
  int bound_cores = 0;
  CommProfile comm;  // the run's strategy's (set at the end of the run)
};

struct Verdict {
  std::string bound;   // "input-bound" | "compute-bound" | "communication-bound"
  std::string advice;  // one sentence naming the concrete knob(s)
};

// An input or communication share of at least `threshold` (default 0.15) of wall time makes
// the run input- or communication-bound (the larger one wins); otherwise it is compute-bound.
Verdict Diagnose(const StepTimeTotals& t, const TuningContext& ctx, double threshold = 0.15);

// A model on a device: how its batches got there (apps/train/device_input.hpp) and what the
// device timed (core/device_staging.hpp). Times are means over the ranks.
struct DeviceInputFigures {
  bool present = false;      // false: the model was on the CPU
  int64_t batches = 0;       // taken, all ranks
  int64_t overlapped = 0;    // of them, copied during the previous step
  double stage_s = 0;        // host time converting into pinned buffers and queueing copies
  bool timed = false;        // the device timed its streams (a GPU, not the simulated device)
  double h2d_stall_s = 0;    // the compute stream waiting for input copies
  double busy_fraction = 0;  // compute stream active (input ready -> the step's last work) / wall
};

struct RunSummary {
  std::string strategy;  // how the ranks shared the work: the strategy unit's name
  int ranks = 1;
  int64_t per_rank_batch = 0;
  int64_t global_batch = 0;
  int64_t epochs = 0;
  int64_t steps = 0;
  int64_t samples = 0;                 // training samples processed by all ranks
  double samples_per_s = 0;            // the job's samples over the slowest rank's time
  double aggregate_samples_per_s = 0;  // the sum of each rank's own samples over its own time
  std::optional<double> test_accuracy;
  std::optional<double> test_loss;
  std::optional<double> test_auc;  // a binary classifier's exact AUC (EvalResult::auc)
  int64_t skipped_steps = 0;       // non-finite steps whose update was dropped (on_nonfinite)
  // All ranks' batches per pass over their shards, and those past the equal step count, never
  // trained on (uneven shards).
  int64_t batches_per_epoch = 0;
  int64_t batches_left_out_per_epoch = 0;
  // Bad input records (data and eval) skipped under on_error = skip, each counted once.
  int64_t skipped_records = 0;
  StepTimeTotals times;
  Verdict verdict;
  // What the strategy adds: its grid ("" for plain data parallelism) and its own figures
  // (model parallelism: measured bubble fraction, point-to-point and collective seconds), in
  // summary.json ("grid", "strategy_figures") and one report line.
  std::string grid;
  std::vector<std::pair<std::string, double>> strategy_figures;
  // The precision of the model's matrix products (core/precision/precision.hpp) and the
  // library kernels that ran them ("" for fp32: shardflow's own and oneDNN's float kernels).
  std::string precision = "fp32";
  std::string precision_kernels;
  // The model's arithmetic rate: 3 x its forward FLOPs per sample (forward, and the two
  // products of each layer's backward pass) x samples_per_s, in GFLOP/s; 0 when not known (a
  // model split over ranks).
  double model_gflops_per_s = 0;
  // The job's peak for its precision: every rank's MeasurePeakGemmRate (core/precision/
  // peak_rate.hpp), measured on all ranks at once at the end of the run and summed, in GFLOP/s;
  // 0 when not measured (train.peak_probe). The fraction of peak is model_gflops_per_s / this;
  // it passes 1 where Winograd convolutions (core/cpu/winograd.hpp) do fewer products than the
  // direct ones model_gflops_per_s counts (the float CNN preset: 1.06 on 2 ranks here).
  double peak_gflops_per_s = 0;
  std::vector<double> peak_rss_mib;  // per rank: the process's peak resident memory
  // Per rank: its device memory at its fullest (DeviceMemory::PeakBytes); empty when no rank's
  // model is on a device; 0 for a rank on the CPU (a parameter server).
  std::vector<double> device_peak_mib;
  // A strategy's own series, each a top-level key of summary.json (a parameter server's
  // "staleness_histogram": updates applied between a worker's pull and its push, per push).
  std::vector<std::pair<std::string, std::vector<double>>> strategy_series;
  // Which rank the others waited for at the gradient all-reduce (core/straggler.hpp); rank -1:
  // not measured (one rank, asynchronous steps).
  StragglerReport straggler;
  DeviceInputFigures device_input;
};

// summary.json: precision, precision_kernels (when set), model_gflops_per_s (when known),
// peak_gflops_per_s and fraction_of_peak (when the peak was measured), ranks,
// global_batch, per_rank_batch, epochs, steps, samples_per_s, test_accuracy or test_loss,
// test_auc, skipped_steps, skipped_records, input_wait_fraction, compute_fraction, comm_fraction,
// verdict, advice, wall_s, aggregate_samples_per_s, peak_rss_mib (per rank); grid,
// strategy_figures, each strategy_series by its name, and straggler (rank, last_fraction,
// margin_ms, cause, input_share, steps, last_fraction_per_rank, gather_ms, clear) when set;
// device_input (batches, overlapped, stage_s, and when the device timed it h2d_stall_s and
// gpu_busy_fraction) for a model on a device.
nlohmann::json SummaryToJson(const RunSummary& s);

// The human-readable end-of-run report (several lines, ending in a newline).
std::string FormatReport(const RunSummary& s);

}  // namespace shardflow
