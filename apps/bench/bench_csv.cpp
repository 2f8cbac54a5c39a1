// shardflow-bench csv: rows/s of the streaming CSV source, one pass over one file on the calling
// thread (bench/csv.sh runs it interleaved with tf.data's CsvDataset on the same file).
//
//   shardflow-bench csv --file F --columns SPEC [--mode source|batch] [--batch B]
//                       [--na NA] [--rows N] [--json]
//     --columns SPEC  csv_columns, e.g. x1:float32,x2:float32,city:string,label:int64
//     --mode source   CsvStreamSource through Dataset::FromRecordSource: one element per row
//     --mode batch    the [data] pipeline (format csv, no shuffle, decode on the consumer
//                     thread, no prefetch) in batches of B (default 1024), as
//                     CsvDataset(...).batch(B)
//     --rows N        the rows the file holds: a different count exits 1
// Prints "csv MODE: N rows in T s = R rows/s (checksum S)"; the checksum is the sum of every
// numeric value read (the same for the peer), so both sides are seen to read the same data.
#include <chrono>
#include <cstdio>

#include "apps/bench/bench_registry.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"
#include "io/pipeline/dataset.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/sources/csv_stream_source.hpp"

namespace shardflow::bench {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Sum of the numeric values of `t` (any rank; strings count nothing).
double Checksum(const Tensor& t) {
  double s = 0;
  const int64_t n = t.num_elements();
  switch (t.dtype()) {
    case DType::kFloat32:
      for (int64_t i = 0; i < n; ++i) s += t.data<float>()[i];
      break;
    case DType::kFloat64:
      for (int64_t i = 0; i < n; ++i) s += t.data<double>()[i];
      break;
    case DType::kInt64:
      for (int64_t i = 0; i < n; ++i) s += static_cast<double>(t.data<int64_t>()[i]);
      break;
    default:
      break;
  }
  return s;
}

struct Options {
  std::string file, columns, mode = "source", na;
  int64_t batch = 1024, rows = -1;
  bool json = false;
};

Options ParseOptions(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        throw Error(ErrorCode::kInvalidArgument, args[i] + " needs a value");
      }
      return args[++i];
    };
    if (args[i] == "--file") {
      o.file = value();
    } else if (args[i] == "--columns") {
      o.columns = value();
    } else if (args[i] == "--mode") {
      o.mode = value();
    } else if (args[i] == "--batch") {
      o.batch = std::stoll(value());
    } else if (args[i] == "--na") {
      o.na = value();
    } else if (args[i] == "--rows") {
      o.rows = std::stoll(value());
    } else if (args[i] == "--json") {
      o.json = true;
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf(
          "usage: shardflow-bench csv --file F --columns SPEC [--mode source|batch] [--batch B]\n"
          "                           [--na NA] [--rows N] [--json]\n");
      throw EarlyExit{0};
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown argument: " + args[i],
                  {.hint = "shardflow-bench csv --help"});
    }
  }
  if (o.file.empty() || o.columns.empty() || (o.mode != "source" && o.mode != "batch")) {
    throw Error(ErrorCode::kInvalidArgument, "csv needs --file, --columns and a known --mode",
                {.hint = "shardflow-bench csv --help"});
  }
  return o;
}

std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> out;
  size_t b = 0;
  for (size_t e; (e = text.find(',', b)) != std::string::npos; b = e + 1) {
    out.push_back(text.substr(b, e - b));
  }
  out.push_back(text.substr(b));
  return out;
}

int Run(const std::vector<std::string>& args) {
  const Options o = ParseOptions(args);
  int64_t rows = 0;
  double sum = 0;
  const double start = Now();
  if (o.mode == "source") {
    pipeline::CsvSourceOptions so;
    so.columns = pipeline::ParseCsvColumns(Split(o.columns));
    if (!o.na.empty()) so.na_values = {o.na};
    auto source = std::make_shared<pipeline::CsvStreamSource>(std::vector<std::string>{o.file}, so);
    auto plan = pipeline::PlanShards(source->Files(), source->SupportsByteRanges(),
                                     pipeline::ShardPolicy::kFile, 1, 0);
    pipeline::PipelineIterator it =
        pipeline::Dataset::FromRecordSource(source, plan).MakeIterator();
    pipeline::Element e;
    while (it.Next(&e)) {
      ++rows;
      for (const auto& [name, t] : e.features) sum += Checksum(t);
    }
  } else {
    pipeline::InputSpec spec;
    spec.data.format = "csv";
    spec.data.files = {o.file};
    spec.data.shuffle_buffer = 0;
    spec.data.parallel_calls = 0;
    spec.data.parallel_reads = 1;
    spec.data.prefetch = 0;
    spec.data.batch_size = o.batch;
    spec.csv.columns = Split(o.columns);
    if (!o.na.empty()) spec.csv.na_values = {o.na};
    pipeline::PipelineIterator it = pipeline::BuildInputPipeline(spec, 0, 1).MakeIterator();
    pipeline::Element b;
    while (it.Next(&b)) {
      rows += b.features.front().second.dim(0);
      for (const auto& [name, t] : b.features) sum += Checksum(t);
    }
  }
  const double seconds = Now() - start;
  std::printf("csv %s: %lld rows in %.3f s = %.0f rows/s (checksum %.6e)\n", o.mode.c_str(),
              static_cast<long long>(rows), seconds, static_cast<double>(rows) / seconds, sum);
  if (o.json) {
    std::printf("{\"bench\":\"csv\",\"mode\":\"%s\",\"rows\":%lld,\"seconds\":%.6f}\n",
                o.mode.c_str(), static_cast<long long>(rows), seconds);
  }
  if (o.rows >= 0 && rows != o.rows) {
    std::fprintf(stderr, "csv: read %lld rows, expected %lld\n", static_cast<long long>(rows),
                 static_cast<long long>(o.rows));
    return 1;
  }
  return 0;
}

SHARDFLOW_BENCH("csv", "rows/s of the streaming CSV source (bench/csv.sh vs tf.data CsvDataset)",
                Run);

}  // namespace
}  // namespace shardflow::bench
