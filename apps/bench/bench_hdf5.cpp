// shardflow-bench hdf5: parallel HDF5 read throughput, side by side with its baselines in one
// run, plus CSV rows/s and IDX MB/s.
//
//   mpirun -np 2 shardflow-bench hdf5 [--bytes N] [--repeat R] [--chunk-rows C] [--gzip L]
//                                      [--dir D] [--csv-rows N] [--driver auto|mpio] [--json]
//
// HDF5: the ranks write a float32 [rows, 1024] dataset of about --bytes (default 1 GiB)
// collectively into a fresh folder under --dir (default $TMPDIR or /tmp), then read it:
//   cold     every rank reads its shard collectively right after the file's pages were dropped
//            from the page cache (fsync + posix_fadvise DONTNEED on this file only)
//   pread    baseline: every rank pread()s its shard's bytes (contiguous layout only)
//   P ranks  every rank reads its shard collectively (warm page cache), best of --repeat
//   P ranks, individual_io   the same, each rank doing its own MPI-IO under the collective call
//   1 rank   rank 0 alone reads the whole dataset (warm), best of --repeat
// and reports GB/s (dataset bytes / slowest rank's time) and the ratios P-rank/1-rank and
// HDF5/pread. Every read is checked (each row holds its row index).
// CSV: rank 0 parses a generated sensor CSV (timestamp + 6 float channels), checks a column sum.
// Warm reads go into buffers allocated and touched once beforehand (Hdf5Reader::ReadRowsInto),
// so they measure reading, not page faults on fresh memory; the cold read allocates its tensor
// (ReadShard) as a first read in a program does. IDX: rank 0 reads Fashion-MNIST's gzipped train
// images (when installed) and an uncompressed IDX copy it writes, checks the shape.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/bench/bench_registry.hpp"
#include "comm/collectives.hpp"
#include "core/check_hdf5.hpp"
#include "core/error.hpp"
#include "core/mpi_env.hpp"
#include "io/csv.hpp"
#include "io/hdf5/reader.hpp"
#include "io/hdf5/writer.hpp"
#include "io/idx.hpp"

namespace shardflow::bench {
namespace {

constexpr int64_t kRowFloats = 1024;  // 4 KiB rows

struct Options {
  int64_t bytes = int64_t{1} << 30;
  int repeat = 3;
  int64_t chunk_rows = 0;
  int gzip = 0;
  std::string dir;
  int64_t csv_rows = 500000;
  bool json = false;
  bool force_mpio = false;  // --driver mpio: MPI-IO even for one rank
};

Options Parse(const std::vector<std::string>& args) {
  Options o;
  const char* tmp = std::getenv("TMPDIR");
  o.dir = tmp ? tmp : "/tmp";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) {
        throw Error(ErrorCode::kInvalidArgument, a + " needs a value", {.key = a});
      }
      return args[++i];
    };
    auto number = [&]() -> int64_t {
      const std::string v = value();
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (end == v.c_str() || *end != '\0' || n < 0) {
        throw Error(ErrorCode::kInvalidArgument, "bad number '" + v + "' for " + a, {.key = a});
      }
      return n;
    };
    if (a == "--bytes") {
      o.bytes = number();
    } else if (a == "--repeat") {
      o.repeat = static_cast<int>(std::max<int64_t>(1, number()));
    } else if (a == "--chunk-rows") {
      o.chunk_rows = number();
    } else if (a == "--gzip") {
      o.gzip = static_cast<int>(number());
    } else if (a == "--dir") {
      o.dir = value();
    } else if (a == "--csv-rows") {
      o.csv_rows = number();
    } else if (a == "--driver") {
      const std::string v = value();
      if (v != "mpio" && v != "auto") {
        throw Error(ErrorCode::kInvalidArgument, "--driver is auto or mpio, not '" + v + "'");
      }
      o.force_mpio = v == "mpio";
    } else if (a == "--json") {
      o.json = true;
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "shardflow-bench hdf5 [--bytes N=1073741824] [--repeat R=3] [--chunk-rows C=0 "
          "(contiguous)] [--gzip L=0] [--dir D=$TMPDIR|/tmp] [--csv-rows N=500000] [--driver "
          "auto|mpio] [--json]\n");
      throw EarlyExit{0};
    } else {
      throw Error(ErrorCode::kInvalidArgument, "unknown argument '" + a + "'",
                  {.hint = "shardflow-bench hdf5 --help"});
    }
  }
  if (o.gzip > 0 && o.chunk_rows == 0) o.chunk_rows = 256;
  return o;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Seconds from a common start to the slowest rank's end. comm::Barrier naps while it waits, so
// ranks that finished do not take the core a rank reading alone (the 1-rank figure, rank 0's
// CSV/IDX runs) needs; that costs up to ~0.1 ms of latency per barrier.
double TimeCollective(comm::Communicator& world, const std::function<void()>& fn) {
  comm::Barrier(world);
  const double t0 = Now();
  fn();
  comm::Barrier(world);
  return Now() - t0;
}

// Every row r holds r (exact in float32 below 2^24 rows).
void CheckRows(const float* data, int64_t first, int64_t rows, const char* what) {
  for (int64_t r = 0; r < rows; ++r) {
    const float want = static_cast<float>(first + r);
    if (data[r * kRowFloats] != want || data[r * kRowFloats + kRowFloats - 1] != want) {
      throw Error(ErrorCode::kInternal,
                  std::string(what) + ": row " + std::to_string(first + r) + " holds wrong data");
    }
  }
}

// Overwrites the values CheckRows looks at, so a read that moved nothing cannot pass the check
// on data left by an earlier read into the same buffer. Outside the timed regions.
void Poison(Tensor* t) {
  float* p = t->data<float>();
  for (int64_t r = 0; r < t->dim(0); ++r)
    p[r * kRowFloats] = p[r * kRowFloats + kRowFloats - 1] = -1;
}

struct Row {
  std::string name;
  double seconds;
  double bytes;
  std::string note;
};

class Report {
 public:
  explicit Report(bool json) : json_(json) {}
  void Add(const Row& r) { rows_.push_back(r); }
  void Ratio(const std::string& name, double value) { ratios_.emplace_back(name, value); }
  void Print(int ranks) const {
    std::printf("%-34s %10s %12s %10s  %s\n", "measurement", "seconds", "MB", "GB/s", "note");
    for (const Row& r : rows_) {
      std::printf("%-34s %10.4f %12.1f %10.3f  %s\n", r.name.c_str(), r.seconds, r.bytes / 1e6,
                  r.bytes / r.seconds / 1e9, r.note.c_str());
    }
    for (const auto& [name, v] : ratios_) std::printf("%-34s %10.3f\n", name.c_str(), v);
    if (!json_) return;
    for (const Row& r : rows_) {
      nlohmann::json j = {{"bench", "hdf5"},  {"ranks", ranks},
                          {"name", r.name},   {"seconds", r.seconds},
                          {"bytes", r.bytes}, {"gb_per_s", r.bytes / r.seconds / 1e9},
                          {"note", r.note}};
      std::printf("%s\n", j.dump().c_str());
    }
    for (const auto& [name, v] : ratios_) {
      std::printf("%s\n", nlohmann::json(
                              {{"bench", "hdf5"}, {"ranks", ranks}, {"ratio", name}, {"value", v}})
                              .dump()
                              .c_str());
    }
  }

 private:
  bool json_;
  std::vector<Row> rows_;
  std::vector<std::pair<std::string, double>> ratios_;
};

void BenchHdf5(const Options& o, const std::string& path, comm::Communicator& world,
               Report* report) {
  const int rank = world.rank();
  const int size = world.size();
  // This rank alone, for the 1-rank read (no topology, no watchdog: it runs no collectives).
  comm::CommunicatorOptions self_options;
  self_options.discover_topology = false;
  self_options.watchdog = std::nullopt;
  comm::Communicator self(comm::Group::kSelf, self_options);
  const auto driver =
      o.force_mpio ? io::Hdf5Options::Driver::kMpio : io::Hdf5Options::Driver::kAuto;
  const int64_t rows = std::max<int64_t>(1, o.bytes / (kRowFloats * 4));
  const double total = static_cast<double>(rows * kRowFloats * 4);
  const io::RowRange mine = io::ShardRows(rows, rank, size);
  const std::string layout = o.chunk_rows > 0
                                 ? "chunk " + std::to_string(o.chunk_rows) + " rows" +
                                       (o.gzip ? ", gzip " + std::to_string(o.gzip) : "")
                                 : "contiguous";
  {
    Tensor part(DType::kFloat32, {mine.size(), kRowFloats});
    for (int64_t r = 0; r < mine.size(); ++r) {
      std::fill_n(part.data<float>() + r * kRowFloats, kRowFloats,
                  static_cast<float>(mine.begin + r));
    }
    const double t = TimeCollective(world, [&] {
      io::Hdf5Writer writer(path, world.raw());
      writer.CreateDataset("x", DType::kFloat32, {rows, kRowFloats},
                           {.chunk_rows = o.chunk_rows, .gzip_level = o.gzip});
      writer.WriteRows("x", mine.begin, part);
      writer.Close();
    });
    report->Add({"write, " + std::to_string(size) + " ranks collective", t, total, layout});
  }
  // Cold: drop this file's pages from the page cache (it is fsynced first; clean pages go).
  if (rank == 0) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd >= 0) {
      ::fsync(fd);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  }
  report->Add({"read cold, " + std::to_string(size) + " ranks collective",
               TimeCollective(world,
                              [&] {
                                io::Hdf5Reader reader(path, world.raw(), {.driver = driver});
                                const Tensor t = reader.ReadShard("x", {.dtype = DType::kFloat32});
                                CheckRows(t.data<float>(), mine.begin, mine.size(), "cold read");
                              }),
               total, "page cache dropped for the file"});
  // Buffers for the warm reads, touched once (the Tensor constructor zero-fills).
  Tensor shard_buf(DType::kFloat32, {mine.size(), kRowFloats});
  Tensor all_buf(DType::kFloat32, {rank == 0 ? rows : 0, kRowFloats});
  double best_p = 1e30, best_ind = 1e30, best_1 = 1e30, best_pread = 1e30;
  haddr_t offset = HADDR_UNDEF;
  if (o.chunk_rows == 0) {
    io::Hdf5File f = io::Hdf5File::Open(path, world.raw());
    io::H5Id ds = f.OpenDataset("x");
    offset = H5Dget_offset(ds.get());
  }
  for (int i = 0; i < o.repeat; ++i) {
    Poison(&shard_buf);
    if (offset != HADDR_UNDEF) {
      best_pread = std::min(
          best_pread, TimeCollective(world, [&] {
            Tensor& t = shard_buf;
            const int fd = ::open(path.c_str(), O_RDONLY);
            if (fd < 0) throw Error(ErrorCode::kIo, "cannot open", {.file = path});
            auto* dst = static_cast<char*>(t.raw_data());
            const int64_t begin = static_cast<int64_t>(offset) + mine.begin * kRowFloats * 4;
            int64_t done = 0;
            const int64_t want = static_cast<int64_t>(t.byte_size());
            while (done < want) {
              const ssize_t n = ::pread(
                  fd, dst + done, static_cast<size_t>(std::min<int64_t>(want - done, 64 << 20)),
                  begin + done);
              if (n <= 0) throw Error(ErrorCode::kIo, "short pread", {.file = path});
              done += n;
            }
            ::close(fd);
            CheckRows(t.data<float>(), mine.begin, mine.size(), "pread");
          }));
    }
    Poison(&shard_buf);
    best_p = std::min(best_p, TimeCollective(world, [&] {
                        io::Hdf5Reader reader(path, world.raw(), {.driver = driver});
                        reader.ReadRowsInto("x", mine.begin, mine.end, shard_buf,
                                            {.dtype = DType::kFloat32});
                        CheckRows(shard_buf.data<float>(), mine.begin, mine.size(), "warm read");
                      }));
    Poison(&shard_buf);
    best_ind = std::min(
        best_ind, TimeCollective(world, [&] {
          io::Hdf5Reader reader(path, world.raw(), {.driver = driver, .individual_io = true});
          reader.ReadRowsInto("x", mine.begin, mine.end, shard_buf, {.dtype = DType::kFloat32});
          CheckRows(shard_buf.data<float>(), mine.begin, mine.size(), "individual-io read");
        }));
    Poison(&all_buf);
    best_1 = std::min(best_1, TimeCollective(world, [&] {
                        if (rank != 0) return;
                        io::Hdf5Reader reader(path, self.raw(), {.driver = driver});
                        reader.ReadRowsInto("x", 0, rows, all_buf, {.dtype = DType::kFloat32});
                        CheckRows(all_buf.data<float>(), 0, rows, "1-rank read");
                      }));
  }
  if (offset != HADDR_UNDEF) {
    report->Add({"pread baseline, " + std::to_string(size) + " ranks", best_pread, total,
                 "warm, best of " + std::to_string(o.repeat)});
  }
  report->Add({"read warm, " + std::to_string(size) + " ranks collective", best_p, total,
               "warm, best of " + std::to_string(o.repeat)});
  report->Add({"read warm, " + std::to_string(size) + " ranks individual_io", best_ind, total,
               "collective call, own MPI-IO per rank"});
  report->Add({"read warm, 1 rank (rank 0 alone)", best_1, total,
               "warm, best of " + std::to_string(o.repeat)});
  report->Ratio("ratio " + std::to_string(size) + "-rank / 1-rank", best_1 / best_p);
  report->Ratio("ratio " + std::to_string(size) + "-rank individual_io / 1-rank",
                best_1 / best_ind);
  if (offset != HADDR_UNDEF) report->Ratio("ratio HDF5 / pread (same ranks)", best_pread / best_p);
}

void BenchCsv(const Options& o, const std::string& dir, Report* report) {
  const std::string path = dir + "/sensors.csv";
  double want = 0;
  {
    std::ofstream out(path);
    out << "timestamp,c0,c1,c2,c3,c4,c5\n";
    char line[256];
    for (int64_t r = 0; r < o.csv_rows; ++r) {
      const double v = static_cast<double>(r % 1000) * 0.5;
      want += v;
      std::snprintf(line, sizeof(line), "%lld,%.1f,%.3f,%.3f,%.3f,%.3f,%.3f\n",
                    static_cast<long long>(1700000000 + r), v, std::sin(r * 0.01), 1.25, -2.5,
                    r * 0.001, 3.75);
      out << line;
    }
  }
  const double bytes = static_cast<double>(std::filesystem::file_size(path));
  io::CsvOptions options;
  options.columns = {{"timestamp", io::CsvType::kInt64}};
  for (int c = 0; c < 6; ++c)
    options.columns.push_back({"c" + std::to_string(c), io::CsvType::kFloat32});
  double best = 1e30;
  for (int i = 0; i < o.repeat; ++i) {
    const double t0 = Now();
    const io::CsvTable t = io::ReadCsv(path, options);
    best = std::min(best, Now() - t0);
    double got = 0;
    for (int64_t r = 0; r < t.rows; ++r) got += t["c0"].values.data<float>()[r];
    if (t.rows != o.csv_rows || std::abs(got - want) > 1e-6 * std::max(1.0, want)) {
      throw Error(ErrorCode::kInternal, "CSV benchmark read wrong data", {.file = path});
    }
  }
  report->Add({"csv parse (7 columns), rank 0", best, bytes,
               std::to_string(static_cast<int64_t>(o.csv_rows / best)) + " rows/s"});
}

void BenchIdx(const Options& o, const std::string& dir, Report* report) {
  const std::string gz = std::string(io::kFashionMnistDir) + "/train-images-idx3-ubyte.gz";
  if (!std::filesystem::exists(gz)) {
    report->Add({"idx (Fashion-MNIST not installed)", 1, 0, "skipped"});
    return;
  }
  const std::string plain = dir + "/train-images-idx3-ubyte";
  io::WriteIdx(plain, io::ReadIdx(gz), false);
  for (const auto& [name, path] : {std::pair{"idx read, gzip (train images)", gz},
                                   std::pair{"idx read, uncompressed copy", plain}}) {
    double best = 1e30;
    double bytes = 0;
    for (int i = 0; i < o.repeat; ++i) {
      const double t0 = Now();
      const Tensor t = io::ReadIdx(path, {.dtype = DType::kUInt8, .shape = Shape{60000, 28, 28}});
      best = std::min(best, Now() - t0);
      bytes = static_cast<double>(t.byte_size());
    }
    report->Add({name, best, bytes, "decompressed MB; rank 0"});
  }
}

int Run(const std::vector<std::string>& args) {
  const Options o = Parse(args);
  comm::Communicator world(comm::Group::kWorld);
  const int rank = world.rank();
  const int size = world.size();
  // Rank 0 makes the folder; every rank uses it (one machine or a shared file system).
  std::string dir;
  if (rank == 0) {
    std::string templ = o.dir + "/shardflow-bench-hdf5-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) {
      throw Error(ErrorCode::kIo, "cannot create a temporary folder", {.file = o.dir});
    }
    dir = templ;
  }
  comm::BroadcastString(world, &dir);
  Report report(o.json);
  try {
    BenchHdf5(o, dir + "/bench.h5", world, &report);
    if (rank == 0) {
      BenchCsv(o, dir, &report);
      BenchIdx(o, dir, &report);
    }
  } catch (...) {
    if (rank == 0) std::filesystem::remove_all(dir);
    throw;
  }
  comm::Barrier(world);
  if (rank == 0) {
    std::filesystem::remove_all(dir);
    std::printf("shardflow-bench hdf5: %d ranks, dataset %.1f MB float32 [rows,1024], folder %s\n",
                size, static_cast<double>(std::max<int64_t>(1, o.bytes / 4096) * 4096) / 1e6,
                o.dir.c_str());
    report.Print(size);
  }
  return 0;
}

SHARDFLOW_BENCH("hdf5",
                "parallel HDF5 collective read/write vs 1 rank and pread; CSV rows/s; IDX MB/s",
                Run);

}  // namespace
}  // namespace shardflow::bench
