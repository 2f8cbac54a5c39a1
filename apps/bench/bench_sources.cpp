// shardflow-bench sources: records/s of each pipeline source on one core.
//
//   shardflow-bench sources [--json] [--lines N] [--records N] [--images N] [--repeat R]
//                           [--dir DIR]
//     --lines N    text lines (and JSON lines) to generate (default 1000000)
//     --records N  CIFAR-10-sized fixed-length records, 3073 bytes (default 20000)
//     --images N   32x32x3 PNG and JPEG images each (default 2000)
//     --repeat R   repetitions; medians are reported (default 3)
//     --dir DIR    where the generated files go (default: a fresh folder under /tmp, removed)
//
// Each case reads every record through Dataset::FromRecordSource on the calling thread (one
// core: cycle_length 1, no read threads) and reports records/s, MB/s of input bytes and CPU
// seconds per wall second, and records per CPU second (less sensitive to a loaded machine).
// The text cases also run the raw LineCursor without the pipeline
// (the per-element cost of the pipeline is the difference). Every run checks the record count
// and a checksum of the delivered bytes against the generated data and exits 1 on a mismatch.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/bench/bench_registry.hpp"
#include "core/mpi_env.hpp"
#include "io/compression.hpp"
#include "io/pipeline/dataset.hpp"
#include "io/pipeline/fixed_length_source.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/sources/image_folder_source.hpp"
#include "io/pipeline/sources/json_lines_source.hpp"
#include "io/pipeline/sources/line_cursor.hpp"
#include "io/pipeline/sources/text_line_source.hpp"

namespace shardflow::bench {
namespace {

namespace fs = std::filesystem;
using pipeline::Element;

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double Cpu() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

struct Options {
  bool json = false;
  int64_t lines = 1000000, records = 20000, images = 2000;
  int repeat = 3;
  std::string dir;
};

// What one pass delivered: count and an order-independent checksum of the bytes.
struct Tally {
  int64_t records = 0;
  uint64_t sum = 0;
  bool operator==(const Tally&) const = default;
};

uint64_t Sum(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t s = n;
  for (size_t i = 0; i < n; ++i) s += p[i];
  return s;
}

Tally DrainSource(std::shared_ptr<const pipeline::RecordSource> source,
                  const std::string& feature) {
  auto plan = pipeline::PlanShards(source->Files(), source->SupportsByteRanges(),
                                   pipeline::ShardPolicy::kFile, 1, 0);
  pipeline::PipelineIterator it = pipeline::Dataset::FromRecordSource(source, plan).MakeIterator();
  Tally t;
  Element e;
  while (it.Next(&e)) {
    ++t.records;
    const Tensor& x = e.Get(feature);
    t.sum += Sum(x.raw_data(), x.byte_size());
  }
  return t;
}

Tally DrainCursor(const std::vector<std::string>& files) {
  Tally t;
  for (const auto& f : files) {
    pipeline::LineCursor cursor(f, {}, {});
    std::string_view text;
    uint64_t offset = 0;
    int64_t line = 0;
    while (cursor.Next(&text, &offset, &line)) {
      ++t.records;
      t.sum += Sum(text.data(), text.size());
    }
  }
  return t;
}

uint64_t InputBytes(const std::vector<std::string>& files) {
  uint64_t n = 0;
  for (const auto& f : files) n += fs::file_size(f);
  return n;
}

uint64_t DirBytes(const fs::path& dir) {
  uint64_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) n += e.file_size();
  }
  return n;
}

int Run(const std::vector<std::string>& args) {
  Options o;
  for (size_t i = 0; i < args.size(); ++i) {
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size())
        throw Error(ErrorCode::kInvalidArgument, args[i] + " needs a value");
      return args[++i];
    };
    if (args[i] == "--json") {
      o.json = true;
    } else if (args[i] == "--lines") {
      o.lines = std::stoll(value());
    } else if (args[i] == "--records") {
      o.records = std::stoll(value());
    } else if (args[i] == "--images") {
      o.images = std::stoll(value());
    } else if (args[i] == "--repeat") {
      o.repeat = std::max(1, std::stoi(value()));
    } else if (args[i] == "--dir") {
      o.dir = value();
    } else if (args[i] == "--help" || args[i] == "-h") {
      std::printf(
          "usage: shardflow-bench sources [--json] [--lines N] [--records N] [--images N]\n"
          "                               [--repeat R] [--dir DIR]\n");
      throw EarlyExit{0};
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown argument: " + args[i],
                  {.hint = "shardflow-bench sources --help"});
    }
  }
  const bool own_dir = o.dir.empty();
  const fs::path dir = own_dir ? fs::temp_directory_path() /
                                     ("shardflow-bench-sources-" + std::to_string(::getpid()))
                               : fs::path(o.dir);
  fs::create_directories(dir);

  // ---- inputs, with the expected tallies ----
  const int kFiles = 8;
  std::vector<std::string> text_files, gz_files, json_files, fixed_files;
  Tally text_want, json_want, fixed_want;
  for (int f = 0; f < kFiles; ++f) {
    std::string text, json;
    for (int64_t i = f; i < o.lines; i += kFiles) {
      const std::string line = "line " + std::to_string(i) + " of the benchmark corpus, words " +
                               std::string(static_cast<size_t>(i % 40), 'w');
      text += line + "\n";
      text_want.records++;
      text_want.sum += Sum(line.data(), line.size());
      std::string body = std::to_string(i);
      body.insert(body.begin(), 't');
      json += "{\"key\": " + std::to_string(i) + ", \"score\": " + std::to_string(i * 0.5) +
              ", \"text\": \"" + body + "\", \"emb\": [1.5, 2, " + std::to_string(i % 7) +
              ", 4]}\n";
      json_want.records++;
      json_want.sum += Sum(body.data(), body.size());
    }
    text_files.push_back((dir / ("text-" + std::to_string(f) + ".txt")).string());
    std::ofstream(text_files.back(), std::ios::binary) << text;
    gz_files.push_back(text_files.back() + ".gz");
    io::DeflatingFile gz(io::FileSystem::Default()->NewWritableFile(gz_files.back()),
                         io::Compression::kGzip);
    ThrowIfError(gz.Append(text));
    ThrowIfError(gz.Close());
    json_files.push_back((dir / ("log-" + std::to_string(f) + ".jsonl")).string());
    std::ofstream(json_files.back(), std::ios::binary) << json;
    std::string fixed;
    for (int64_t i = f; i < o.records; i += kFiles) {
      std::string r(3073, static_cast<char>(i % 251));
      r[0] = static_cast<char>(i % 10);
      fixed += r;
      fixed_want.records++;
      fixed_want.sum += Sum(r.data(), r.size());
    }
    fixed_files.push_back((dir / ("data_batch_" + std::to_string(f) + ".bin")).string());
    std::ofstream(fixed_files.back(), std::ios::binary) << fixed;
  }
  Tally png_want, jpeg_want;
  for (const char* kind : {"png", "jpeg"}) {
    for (int64_t i = 0; i < o.images; ++i) {
      Tensor image(DType::kUInt8, {32, 32, 3});
      for (int64_t k = 0; k < image.num_elements(); ++k) {
        image.data<uint8_t>()[k] = static_cast<uint8_t>((k * 3 + i * 17) % 256);
      }
      const fs::path cls = dir / kind / ("class" + std::to_string(i % 10));
      fs::create_directories(cls);
      const bool png = std::string(kind) == "png";
      std::ofstream(cls / ("img" + std::to_string(i) + (png ? ".png" : ".jpg")), std::ios::binary)
          << (png ? pipeline::EncodePng(image) : pipeline::EncodeJpeg(image));
      (png ? png_want : jpeg_want).records++;
    }
  }

  struct Case {
    std::string name, unit;
    uint64_t bytes;
    std::function<Tally()> run;
    Tally want;
    bool check_sum;
  };
  const auto schema =
      pipeline::ParseJsonSchema("key:int64,score:float32,text:bytes,emb:float32[4]");
  std::vector<Case> cases = {
      {"text (LineCursor only)", "lines", InputBytes(text_files),
       [&] { return DrainCursor(text_files); }, text_want, true},
      {"text", "lines", InputBytes(text_files),
       [&] { return DrainSource(pipeline::OpenTextLineSource(text_files), "line"); }, text_want,
       true},
      {"text gzip", "lines", InputBytes(gz_files),
       [&] { return DrainSource(pipeline::OpenTextLineSource(gz_files), "line"); }, text_want,
       true},
      {"jsonl (4 fields)", "lines", InputBytes(json_files),
       [&] {
         return DrainSource(pipeline::OpenJsonLinesSource(json_files, {.schema = schema}), "text");
       },
       json_want, true},
      {"fixed (3073 B)", "records", InputBytes(fixed_files),
       [&] {
         return DrainSource(pipeline::OpenFixedLengthSource(fixed_files, {.record_bytes = 3073}),
                            "bytes");
       },
       fixed_want, true},
      {"images png 32x32", "images", DirBytes(dir / "png"),
       [&] {
         return DrainSource(pipeline::OpenImageFolderSource({.root = (dir / "png").string()}),
                            "label");
       },
       png_want, false},
      {"images jpeg 32x32", "images", DirBytes(dir / "jpeg"),
       [&] {
         return DrainSource(pipeline::OpenImageFolderSource({.root = (dir / "jpeg").string()}),
                            "label");
       },
       jpeg_want, false},
  };

  int status = 0;
  if (!o.json) {
    std::printf("%-24s %10s %14s %10s %9s %16s\n", "source (1 core)", "records", "records/s",
                "MB/s", "cpu/wall", "records/cpu-s");
  }
  for (const Case& c : cases) {
    std::vector<double> rates, mbs, cpus, per_cpu;
    for (int r = 0; r < o.repeat; ++r) {
      const double w0 = Now(), c0 = Cpu();
      const Tally got = c.run();
      const double wall = Now() - w0, cpu = Cpu() - c0;
      if (got.records != c.want.records || (c.check_sum && got.sum != c.want.sum)) {
        std::fprintf(
            stderr, "%s: got %lld records (sum %llu), want %lld (sum %llu)\n", c.name.c_str(),
            static_cast<long long>(got.records), static_cast<unsigned long long>(got.sum),
            static_cast<long long>(c.want.records), static_cast<unsigned long long>(c.want.sum));
        status = 1;
      }
      rates.push_back(static_cast<double>(got.records) / wall);
      mbs.push_back(static_cast<double>(c.bytes) / wall / 1e6);
      cpus.push_back(cpu / wall);
      per_cpu.push_back(static_cast<double>(got.records) / cpu);
    }
    std::sort(rates.begin(), rates.end());
    std::sort(mbs.begin(), mbs.end());
    std::sort(cpus.begin(), cpus.end());
    std::sort(per_cpu.begin(), per_cpu.end());
    const size_t m = rates.size() / 2;
    if (o.json) {
      std::printf("%s\n", nlohmann::json{{"bench", "sources"},
                                         {"case", c.name},
                                         {"unit", c.unit},
                                         {"records", c.want.records},
                                         {"records_per_s", rates[m]},
                                         {"mb_per_s", mbs[m]},
                                         {"cpu_per_wall", cpus[m]},
                                         {"records_per_cpu_s", per_cpu[m]},
                                         {"repeat", o.repeat}}
                              .dump()
                              .c_str());
    } else {
      std::printf("%-24s %10lld %14.0f %10.1f %9.2f %16.0f\n", c.name.c_str(),
                  static_cast<long long>(c.want.records), rates[m], mbs[m], cpus[m], per_cpu[m]);
    }
  }
  if (own_dir) fs::remove_all(dir);
  return status;
}

SHARDFLOW_BENCH("sources",
                "records/s of the text, gzip text, JSON-lines, fixed-length and "
                "image-folder sources on one core",
                Run);

}  // namespace
}  // namespace shardflow::bench
