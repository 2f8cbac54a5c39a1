#include "core/run_report.hpp"

#include <algorithm>
#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

namespace shardflow {
namespace {

double Fraction(double part, double whole) {
  return whole > 0 ? std::clamp(part / whole, 0.0, 1.0) : 0.0;
}

// Knob values as a user writes them: autotuned ones (negative) are "auto".
std::string Knob(int value) { return value < 0 ? std::string("auto") : std::to_string(value); }

// "auto = 1" when the value auto resolved to is known.
std::string Knob(int value, int used) {
  return value < 0 && used > 0 ? "auto = " + std::to_string(used) : Knob(value);
}

// The compute-bound advice: more threads only while the node has idle cores.
std::string ComputeAdvice(const TuningContext& ctx) {
  const int busy = ctx.threads * std::max(1, ctx.local_ranks);
  std::ostringstream advice;
  if (ctx.bound_cores > 0 && ctx.threads > ctx.bound_cores) {
    advice << "the " << ctx.threads << " threads of each rank share the " << ctx.bound_cores
           << " core" << (ctx.bound_cores == 1 ? "" : "s") << " the launcher bound it to: to use "
           << ctx.threads << ", give mpirun --map-by slot:PE=" << ctx.threads
           << " or --bind-to none (srun: --cpus-per-task=" << ctx.threads << ")";
  } else if (ctx.cores > 0 && busy >= ctx.cores) {
    advice << "input and communication keep up and every core is busy (" << ctx.local_ranks
           << " ranks x " << ctx.threads << " threads on " << ctx.cores
           << " cores): to go faster, run on more nodes or faster cores";
  } else if (ctx.cores > 0) {
    advice << "input and communication keep up: to go faster, raise train.threads (now "
           << ctx.threads << "; " << ctx.local_ranks << " ranks x " << ctx.threads
           << " threads use " << busy << " of " << ctx.cores << " cores) or add ranks";
  } else {
    advice << "input and communication keep up: to go faster, raise train.threads (now "
           << ctx.threads << ") or add ranks";
  }
  return advice.str();
}

std::string Percent(double fraction) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%.0f%%", fraction * 100);
  return buf;
}

}  // namespace

double StepTimeTotals::InputFraction() const { return Fraction(input_wait_s, wall_s); }
double StepTimeTotals::ComputeFraction() const { return Fraction(compute_s, wall_s); }
double StepTimeTotals::CommFraction() const { return Fraction(comm_s, wall_s); }
double StepTimeTotals::OtherFraction() const {
  return std::max(0.0, 1.0 - InputFraction() - ComputeFraction() - CommFraction());
}

namespace {

// What to do about a communication-bound run: cores first (ranks that outnumber them wait for a
// core, not for data), then the strategy's buckets or its own knob, then the batch.
std::string CommAdvice(const TuningContext& ctx) {
  std::ostringstream advice;
  if (ctx.cores > 0 && ctx.local_ranks * ctx.threads > ctx.cores) {
    advice << ctx.local_ranks << " ranks x " << ctx.threads << " threads oversubscribe the node's "
           << ctx.cores << " cores, so ranks wait for a core rather than for data: run fewer "
           << "ranks (or threads) per node, or spread them over more nodes";
    return advice.str();
  }
  const CommProfile& comm = ctx.comm;
  if (comm.buckets != 0 && !ctx.overlap) {
    advice << "set dist.overlap = true";
  } else if (comm.buckets < 0) {
    advice << "raise dist.bucket_mb (now " << ctx.bucket_mb << ")";
  } else if (comm.buckets > 1) {
    advice << "raise dist.bucket_mb (now " << ctx.bucket_mb << ") to send its " << comm.buckets
           << " gradient buckets (the largest " << std::setprecision(3) << comm.largest_bucket_mb
           << " MiB) in fewer messages";
  } else if (comm.buckets == 1) {
    advice << "the gradients already travel as one bucket (" << std::setprecision(3)
           << comm.largest_bucket_mb << " MiB)";
  } else if (!comm.knob.empty()) {
    advice << comm.knob;
  }
  if (advice.tellp() > 0) advice << ", or ";
  advice << "raise train.batch_size so each step computes more per byte sent";
  return advice.str();
}

}  // namespace

Verdict Diagnose(const StepTimeTotals& t, const TuningContext& ctx, double threshold) {
  const double input = t.InputFraction();
  const double comm = t.CommFraction();
  std::ostringstream advice;
  if (input >= threshold && input >= comm) {
    advice << Percent(input) << " of step time waiting for data; ";
    if (ctx.parallel_calls >= 0 && ctx.parallel_calls < ctx.threads * 2) {
      advice << "raise data.parallel_calls (now " << Knob(ctx.parallel_calls) << ")";
    } else {
      advice << "raise data.parallel_reads (now "
             << Knob(ctx.parallel_reads, ctx.parallel_reads_used)
             << ") or data.parallel_calls (now " << Knob(ctx.parallel_calls) << ")";
    }
    if (!ctx.cache_enabled) advice << ", or set data.cache = memory if the data fits";
    if (ctx.prefetch >= 0 && ctx.prefetch < 2) {
      advice << ", and data.prefetch >= 2 (now " << ctx.prefetch << ")";
    }
    return {"input-bound", advice.str()};
  }
  if (comm >= threshold) {
    return {"communication-bound", Percent(comm) + " of step time blocked on " +
                                       ctx.comm.blocked_on + "; " + CommAdvice(ctx)};
  }
  advice << Percent(t.ComputeFraction()) << " of step time computing; ";
  advice << ComputeAdvice(ctx);
  return {"compute-bound", advice.str()};
}

nlohmann::json SummaryToJson(const RunSummary& s) {
  nlohmann::json j;
  if (!s.strategy.empty()) j["strategy"] = s.strategy;
  j["ranks"] = s.ranks;
  j["per_rank_batch"] = s.per_rank_batch;
  j["global_batch"] = s.global_batch;
  j["epochs"] = s.epochs;
  j["steps"] = s.steps;
  j["skipped_steps"] = s.skipped_steps;
  j["batches_per_epoch"] = s.batches_per_epoch;
  j["batches_left_out_per_epoch"] = s.batches_left_out_per_epoch;
  j["skipped_records"] = s.skipped_records;
  j["samples"] = s.samples;
  j["samples_per_s"] = s.samples_per_s;
  j["aggregate_samples_per_s"] = s.aggregate_samples_per_s;
  if (s.test_accuracy) j["test_accuracy"] = *s.test_accuracy;
  if (s.test_loss) j["test_loss"] = *s.test_loss;
  if (s.test_auc) j["test_auc"] = *s.test_auc;
  j["wall_s"] = s.times.wall_s;
  j["input_wait_fraction"] = s.times.InputFraction();
  j["compute_fraction"] = s.times.ComputeFraction();
  j["comm_fraction"] = s.times.CommFraction();
  j["verdict"] = s.verdict.bound;
  j["advice"] = s.verdict.advice;
  if (!s.peak_rss_mib.empty()) j["peak_rss_mib"] = s.peak_rss_mib;
  if (!s.device_peak_mib.empty()) j["device_peak_mib"] = s.device_peak_mib;
  if (!s.grid.empty()) j["grid"] = s.grid;
  j["precision"] = s.precision;
  if (!s.precision_kernels.empty()) j["precision_kernels"] = s.precision_kernels;
  if (s.model_gflops_per_s > 0) j["model_gflops_per_s"] = s.model_gflops_per_s;
  if (s.model_gflops_per_s > 0 && s.peak_gflops_per_s > 0) {
    j["peak_gflops_per_s"] = s.peak_gflops_per_s;
    j["fraction_of_peak"] = s.model_gflops_per_s / s.peak_gflops_per_s;
  }
  for (const auto& [name, series] : s.strategy_series) j[name] = series;
  for (const auto& [name, value] : s.strategy_figures) j["strategy_figures"][name] = value;
  if (s.device_input.present) {
    const DeviceInputFigures& d = s.device_input;
    j["device_input"] = {
        {"batches", d.batches}, {"overlapped", d.overlapped}, {"stage_s", d.stage_s}};
    if (d.timed) {
      j["device_input"]["h2d_stall_s"] = d.h2d_stall_s;
      j["device_input"]["gpu_busy_fraction"] = d.busy_fraction;
    }
  }
  if (s.straggler.rank >= 0) {
    j["straggler"] = {{"rank", s.straggler.rank},
                      {"last_fraction", s.straggler.last_fraction},
                      {"margin_ms", 1e3 * s.straggler.margin_s},
                      {"cause", s.straggler.cause},
                      {"input_share", s.straggler.input_share},
                      {"steps", s.straggler.steps},
                      {"last_fraction_per_rank", s.straggler.last_per_rank},
                      {"gather_ms", 1e3 * s.straggler.gather_s},
                      {"clear", s.straggler.Clear()}};
    if (!s.straggler.why.empty()) j["straggler"]["why"] = s.straggler.why;
    for (const ShardSize& shard : s.straggler.shards) {
      j["straggler"]["shards"].push_back({{"bytes", shard.bytes}, {"records", shard.records}});
    }
  }
  return j;
}

std::string FormatReport(const RunSummary& s) {
  std::ostringstream out;
  char line[256];
  out << "== shardflow run report\n";
  // "(N global)" only where it says something: one data replica's batch is the global one.
  const std::string global = s.global_batch == s.per_rank_batch
                                 ? std::string()
                                 : " (" + std::to_string(s.global_batch) + " global)";
  std::snprintf(line, sizeof(line), "ranks %d, batch %lld per rank%s, %lld epochs, %lld steps\n",
                s.ranks, static_cast<long long>(s.per_rank_batch), global.c_str(),
                static_cast<long long>(s.epochs), static_cast<long long>(s.steps));
  out << line;
  if (s.skipped_steps > 0) {
    out << "skipped steps   " << s.skipped_steps << " (non-finite loss or gradients)\n";
  }
  if (s.batches_left_out_per_epoch > 0) {
    out << "left out        " << s.batches_left_out_per_epoch << " of " << s.batches_per_epoch
        << " batches per epoch (uneven shards)\n";
  }
  if (s.skipped_records > 0) {
    out << "skipped records " << s.skipped_records << " (bad input records, on_error = skip)\n";
  }
  if (s.precision != "fp32") {
    out << "precision       " << s.precision
        << (s.precision_kernels.empty() ? "" : " (" + s.precision_kernels + ")") << "\n";
  }
  if (!s.strategy.empty()) {
    out << "strategy        " << s.strategy << (s.grid.empty() ? "" : " (" + s.grid + ")");
    for (const auto& [name, value] : s.strategy_figures) {
      std::snprintf(line, sizeof(line), ", %s %.3g", name.c_str(), value);
      out << line;
    }
    out << "\n";
  }
  if (!s.peak_rss_mib.empty()) {
    double most = 0;
    for (double m : s.peak_rss_mib) most = std::max(most, m);
    std::snprintf(line, sizeof(line), "peak memory     %.0f MiB on the largest rank", most);
    out << line;
    if (!s.device_peak_mib.empty()) {
      most = 0;
      for (double m : s.device_peak_mib) most = std::max(most, m);
      std::snprintf(line, sizeof(line), "; device %.0f MiB on the largest", most);
      out << line;
    }
    out << "\n";
  }
  if (s.test_accuracy) {
    std::snprintf(line, sizeof(line), "test accuracy   %.4f\n", *s.test_accuracy);
    out << line;
  }
  if (s.test_loss) {
    std::snprintf(line, sizeof(line), "test loss       %.6g\n", *s.test_loss);
    out << line;
  }
  if (s.test_auc) {
    std::snprintf(line, sizeof(line), "test AUC        %.4f\n", *s.test_auc);
    out << line;
  }
  std::snprintf(line, sizeof(line), "throughput      %.0f samples/s (%.1f s of training)",
                s.samples_per_s, s.times.wall_s);
  out << line;
  if (s.model_gflops_per_s > 0) {
    std::snprintf(line, sizeof(line), ", %.1f GFLOP/s of model arithmetic", s.model_gflops_per_s);
    out << line;
    if (s.peak_gflops_per_s > 0) {
      std::snprintf(line, sizeof(line), " = %.2f of the %.0f GFLOP/s its %s GEMM reaches here",
                    s.model_gflops_per_s / s.peak_gflops_per_s, s.peak_gflops_per_s,
                    s.precision.c_str());
      out << line;
      // Model arithmetic counts direct products; Winograd convolutions do fewer.
      if (s.model_gflops_per_s > s.peak_gflops_per_s) out << " (Winograd does fewer products)";
    }
  }
  out << "\n";
  std::snprintf(line, sizeof(line),
                "step time       input wait %5.1f%% | compute %5.1f%% | communication %5.1f%% | "
                "other %5.1f%% (evaluation, checkpoints, waiting for the slowest rank)\n",
                100 * s.times.InputFraction(), 100 * s.times.ComputeFraction(),
                100 * s.times.CommFraction(), 100 * s.times.OtherFraction());
  out << line;
  if (s.device_input.present) {
    const DeviceInputFigures& d = s.device_input;
    std::snprintf(line, sizeof(line),
                  "device input    %lld of %lld batches copied during the previous step; "
                  "staging %.3g s on the host",
                  static_cast<long long>(d.overlapped), static_cast<long long>(d.batches),
                  d.stage_s);
    out << line;
    if (d.timed) {
      std::snprintf(line, sizeof(line), "; compute waited %.3g s for copies; GPU busy %.1f%%\n",
                    d.h2d_stall_s, 100 * d.busy_fraction);
      out << line;
    } else {
      out << " (this device does not time its streams)\n";
    }
  }
  if (s.straggler.rank >= 0) out << "straggler       " << FormatStraggler(s.straggler) << "\n";
  out << "verdict         " << s.verdict.bound << ": " << s.verdict.advice << "\n";
  return out.str();
}

}  // namespace shardflow
