// BuildInputPipeline with real ranks (run at 1, 2 and 4): rank 0 writes 1001 Examples in 7
// TFRecord files of uneven sizes plus one large file, then for every shard policy the union of
// the ids over all ranks is every record exactly once, CountLocalBatches matches what each
// rank's pipeline yields and LimitSteps gives every rank the MIN; the order does not depend on
// parallel_calls or parallel_reads; the Fashion-MNIST TFRecord and HDF5 fixtures give the
// manifest's counts and sums through the batched pipeline; bad input fails naming file, record
// and stage (or is skipped under on_corrupt = skip).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <numeric>

#include "io/example.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/step_count.hpp"
#include "io/tfrecord_writer.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kRecords = 1001;
constexpr int kPix = 16;

int Rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int Size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

std::string ExampleFor(int64_t id) {
  std::string pix(kPix, '\0');
  for (int i = 0; i < kPix; ++i) pix[i] = static_cast<char>((id * 7 + i) & 0xff);
  io::ExampleBuilder b;
  b.AddInt64("id", {id}).AddInt64("label", {id % 10}).AddBytes("pix", {pix});
  return b.Serialize();
}

// Shared scratch folder: rank 0 creates and fills it, the others get its path.
class Data {
 public:
  Data() {
    std::string path;
    if (Rank() == 0) {
      dir_ = std::make_unique<testing::ScratchDir>("input-mpi");
      path = dir_->path().string();
      // 7 files of uneven sizes (1001 = 400 + 250 + 150 + 100 + 60 + 40 + 1).
      const int64_t sizes[7] = {400, 250, 150, 100, 60, 40, 1};
      int64_t id = 0;
      for (int f = 0; f < 7; ++f) {
        io::TFRecordWriter w(path + "/part-" + std::to_string(f) + ".tfrecord");
        for (int64_t k = 0; k < sizes[f]; ++k) w.Write(ExampleFor(id++));
        w.Close();
      }
      std::filesystem::create_directories(path + "/big");
      io::TFRecordWriter big(path + "/big/all.tfrecord");
      for (int64_t k = 0; k < kRecords; ++k) big.Write(ExampleFor(k));
      big.Close();
    }
    int n = static_cast<int>(path.size());
    MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    path.resize(static_cast<size_t>(n));
    MPI_Bcast(path.data(), n, MPI_CHAR, 0, MPI_COMM_WORLD);
    path_ = path;
  }
  ~Data() { MPI_Barrier(MPI_COMM_WORLD); }  // then rank 0 removes the folder
  const std::string& path() const { return path_; }

 private:
  std::unique_ptr<testing::ScratchDir> dir_;
  std::string path_;
};

// Created in SetUp (after MPI_Init), removed in TearDown after every rank is done.
class DataEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { data_ = std::make_unique<Data>(); }
  void TearDown() override { data_.reset(); }
  Data& data() { return *data_; }

 private:
  std::unique_ptr<Data> data_;
};
DataEnvironment* const g_env =
    static_cast<DataEnvironment*>(::testing::AddGlobalTestEnvironment(new DataEnvironment));

Data& Shared() { return g_env->data(); }

InputSpec SpecFor(const std::string& glob) {
  InputSpec spec;
  spec.data.files = {glob};
  spec.features = {"id:int64:int64:scalar", "label:int64:int64:1",
                   "pix:bytes:uint8:" + std::to_string(kPix)};
  spec.data.batch_size = 8;
  spec.data.shuffle_buffer = 64;
  spec.data.seed = 7;
  spec.data.parallel_calls = 2;
  spec.data.parallel_reads = 2;
  spec.data.prefetch = 2;
  return spec;
}

struct RunResult {
  std::vector<int64_t> ids;  // in order
  int64_t batches = 0;
};

RunResult Drain(const Dataset& ds) {
  RunResult r;
  PipelineIterator it = ds.MakeIterator();
  Element batch;
  while (it.Next(&batch)) {
    const Tensor& id = batch.Get("id");
    const Tensor& label = batch.Get("label");
    const Tensor& pix = batch.Get("pix");
    EXPECT_EQ(id.rank(), 1u);
    EXPECT_EQ(label.shape(), (Shape{id.dim(0), 1}));
    EXPECT_EQ(pix.shape(), (Shape{id.dim(0), kPix}));
    for (int64_t i = 0; i < id.dim(0); ++i) {
      const int64_t v = id.data<int64_t>()[i];
      r.ids.push_back(v);
      EXPECT_EQ(label.data<int64_t>()[i], v % 10);
      EXPECT_EQ(pix.data<uint8_t>()[i * kPix + 3], static_cast<uint8_t>((v * 7 + 3) & 0xff));
    }
    ++r.batches;
  }
  return r;
}

// Every rank's ids, gathered on rank 0.
std::vector<int64_t> GatherIds(const std::vector<int64_t>& mine) {
  int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(Size())), displs(static_cast<size_t>(Size()));
  MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::partial_sum(counts.begin(), counts.end() - 1, displs.begin() + 1);
  std::vector<int64_t> all(Rank() == 0 ? static_cast<size_t>(displs.back() + counts.back()) : 0);
  MPI_Gatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, 0,
              MPI_COMM_WORLD);
  return all;
}

void ExpectEveryIdOnce(std::vector<int64_t> all, int64_t n) {
  if (Rank() != 0) return;
  std::sort(all.begin(), all.end());
  std::vector<int64_t> want(static_cast<size_t>(n));
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(all, want);
}

class PolicyTest : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(PolicyTest, EveryRecordExactlyOnceAndEqualSteps) {
  const auto& [policy, files] = GetParam();
  InputSpec spec = SpecFor(Shared().path() + "/" + files);
  spec.data.shard_policy = ParseShardPolicy(policy);
  const RunResult r = Drain(BuildInputPipeline(spec, Rank(), Size()));
  ExpectEveryIdOnce(GatherIds(r.ids), kRecords);
  // The count is exact, so the MIN over ranks is safe to agree on.
  const int64_t local = CountLocalBatches(spec, Rank(), Size());
  EXPECT_EQ(local, r.batches);
  EXPECT_EQ(CountLocalRecords(spec, Rank(), Size()), static_cast<int64_t>(r.ids.size()));
  int64_t agreed = 0;
  MPI_Allreduce(&local, &agreed, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  auto report = std::make_shared<StepLimitReport>();
  const RunResult limited =
      Drain(LimitSteps(BuildInputPipeline(spec, Rank(), Size()), agreed, report));
  EXPECT_EQ(limited.batches, agreed);
  int64_t steps[2] = {limited.batches, -limited.batches};
  MPI_Allreduce(MPI_IN_PLACE, steps, 2, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  EXPECT_EQ(steps[0], -steps[1]) << "ranks ran different step counts";
  EXPECT_EQ(report->batches_left_out.load(), local - agreed);
}

INSTANTIATE_TEST_SUITE_P(
    Policies, PolicyTest,
    ::testing::Combine(::testing::Values("file", "record", "byte_range", "auto"),
                       ::testing::Values("part-*.tfrecord", "big/all.tfrecord")));

TEST(InputPipelineMpi, SameOrderForAnyThreadCountAndRun) {
  std::vector<int64_t> first;
  for (int reads : {1, 4}) {
    for (int calls : {1, 2, 8}) {
      InputSpec spec = SpecFor(Shared().path() + "/part-*.tfrecord");
      spec.data.shard_policy = ShardPolicy::kRecord;
      spec.data.cycle_length = 4;  // the order; parallel_reads only adds read-ahead threads
      spec.data.parallel_reads = reads;
      spec.data.parallel_calls = calls;
      const RunResult r = Drain(BuildInputPipeline(spec, Rank(), Size()));
      if (first.empty()) {
        first = r.ids;
        ASSERT_FALSE(first.empty());
      } else {
        EXPECT_EQ(r.ids, first) << "reads=" << reads << " calls=" << calls;
      }
    }
  }
  // A different seed shuffles differently (the test above can fail).
  InputSpec spec = SpecFor(Shared().path() + "/part-*.tfrecord");
  spec.data.shard_policy = ShardPolicy::kRecord;
  spec.data.cycle_length = 4;
  spec.data.seed = 8;
  if (first.size() > 20) {
    EXPECT_NE(Drain(BuildInputPipeline(spec, Rank(), Size())).ids, first);
  }
}

struct Sums {
  int64_t count = 0, labels = 0, pixels = 0;
};

Sums ReduceSums(const Sums& mine) {
  int64_t v[3] = {mine.count, mine.labels, mine.pixels};
  MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return {v[0], v[1], v[2]};
}

Sums SumFashion(const InputSpec& spec, const std::string& image, const std::string& label,
                std::vector<int64_t>* ids, const std::string& id_name) {
  Sums s;
  PipelineIterator it = BuildInputPipeline(spec, Rank(), Size()).MakeIterator();
  Element batch;
  while (it.Next(&batch)) {
    const Tensor& img = batch.Get(image);
    const Tensor& lab = batch.Get(label);
    EXPECT_EQ(img.shape(), (Shape{lab.dim(0), 28, 28, 1}));
    EXPECT_LE(lab.dim(0), spec.data.batch_size);
    for (int64_t i = 0; i < lab.dim(0); ++i) s.labels += lab.data<int64_t>()[i];
    for (int64_t i = 0; i < img.num_elements(); ++i) s.pixels += img.data<uint8_t>()[i];
    s.count += lab.dim(0);
    const Tensor& id = batch.Get(id_name);
    for (int64_t i = 0; i < id.dim(0); ++i) ids->push_back(id.data<int64_t>()[i]);
  }
  return s;
}

TEST(InputPipelineMpi, FashionMnistTfrecordFixtureMatchesManifest) {
  for (const char* policy : {"auto", "record", "byte_range"}) {
    InputSpec spec;
    spec.data.files = {
        (testing::FixturesDir() / "tfrecord/fmnist-test-0000?-of-00002.tfrecord").string()};
    spec.data.shard_policy = ParseShardPolicy(policy);
    spec.features = {"image_raw:bytes:uint8:28x28x1", "label:int64:int64:scalar",
                     "id:int64:int64:scalar"};
    spec.data.batch_size = 64;
    std::vector<int64_t> ids;
    const Sums s = ReduceSums(SumFashion(spec, "image_raw", "label", &ids, "id"));
    EXPECT_EQ(s.count, 1000) << policy;
    EXPECT_EQ(s.labels, 2138 + 2225) << policy;
    EXPECT_EQ(s.pixels, 29494551 + 28539598) << policy;
    ExpectEveryIdOnce(GatherIds(ids), 1000);
  }
  // Compressed shard 0 (gzip and zlib, chosen by suffix): no byte ranges, still exactly once.
  for (const char* suffix : {".gz", ".zlib"}) {
    InputSpec spec;
    spec.data.files = {(testing::FixturesDir() /
                        ("tfrecord/fmnist-test-00000-of-00002.tfrecord" + std::string(suffix)))
                           .string()};
    spec.features = {"image_raw:bytes:uint8:28x28x1", "label:int64:int64:scalar",
                     "id:int64:int64:scalar"};
    spec.data.batch_size = 50;
    std::vector<int64_t> ids;
    const Sums s = ReduceSums(SumFashion(spec, "image_raw", "label", &ids, "id"));
    EXPECT_EQ(s.count, 500) << suffix;
    EXPECT_EQ(s.labels, 2138) << suffix;
    EXPECT_EQ(s.pixels, 29494551) << suffix;
    EXPECT_EQ(CountLocalRecords(spec, Rank(), Size()) > 0 || Size() > 1, true);
  }
}

TEST(InputPipelineMpi, Hdf5FixtureExactlyOnce) {
  for (const char* policy : {"auto", "record", "byte_range", "file"}) {
    InputSpec spec;
    spec.data.format = "hdf5";
    spec.data.files = {(testing::FixturesDir() / "hdf5/fmnist-test-1000.h5").string()};
    spec.data.shard_policy = ParseShardPolicy(policy);
    spec.features = {"images:uint8:28x28x1", "labels:int64:scalar", "ids:int64:scalar"};
    spec.data.batch_size = 32;
    std::vector<int64_t> ids;
    const Sums s = ReduceSums(SumFashion(spec, "images", "labels", &ids, "ids"));
    EXPECT_EQ(s.count, 1000) << policy;
    EXPECT_EQ(s.labels, 4363) << policy;
    EXPECT_EQ(s.pixels, 58034149) << policy;
    ExpectEveryIdOnce(GatherIds(ids), 1000);
    const int64_t local = CountLocalBatches(spec, Rank(), Size());
    EXPECT_EQ(local, (static_cast<int64_t>(ids.size()) + 31) / 32) << policy;
  }
}

// ---- bad input (each rank on its own) ----

std::string ErrorOf(const InputSpec& spec) {
  try {
    Drain(BuildInputPipeline(spec, Rank(), Size()));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(InputPipelineBadInput, MissingFileAndEmptyGlob) {
  InputSpec spec = SpecFor(Shared().path() + "/no-such-file.tfrecord");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("no-such-file.tfrecord"));
  spec = SpecFor(Shared().path() + "/nothing-*.tfrecord");
  EXPECT_THAT(ErrorOf(spec), HasSubstr("nothing-*.tfrecord"));
  spec = SpecFor(Shared().path() + "/part-*.tfrecord");
  spec.data.format = "parquet";
  EXPECT_THAT(ErrorOf(spec), HasSubstr("key=format"));
}

TEST(InputPipelineBadInput, CorruptRecordFailsOrIsSkipped) {
  // A private copy of part-5 (40 records) with one byte of record 3's data flipped.
  testing::ScratchDir dir("input-corrupt");
  const std::string path = (dir / "bad.tfrecord").string();
  std::filesystem::copy_file(Shared().path() + "/part-5.tfrecord", path);
  const uint64_t record_bytes = 16 + ExampleFor(0).size();
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(3 * record_bytes + 12 + 5));
    char c = 0;
    f.seekg(f.tellp());
    f.get(c);
    f.seekp(static_cast<std::streamoff>(3 * record_bytes + 12 + 5));
    f.put(static_cast<char>(c ^ 0x40));
  }
  InputSpec spec = SpecFor(path);
  spec.data.shard_policy = ShardPolicy::kFile;
  const std::string what = Rank() == 0 ? ErrorOf(spec) : "";
  if (Rank() == 0) {
    EXPECT_THAT(what, HasSubstr("bad.tfrecord"));
    EXPECT_THAT(what, HasSubstr("record=3"));
    EXPECT_THAT(what, HasSubstr("CRC"));
    EXPECT_THAT(what, HasSubstr("read"));
    spec.on_corrupt = "skip";
    EXPECT_EQ(Drain(BuildInputPipeline(spec, 0, 1)).ids.size(), 39u);
  }
}

TEST(InputPipelineBadInput, SchemaMismatchNamesFeatureFileRecordAndStage) {
  InputSpec spec = SpecFor(Shared().path() + "/part-6.tfrecord");  // one record
  spec.data.shard_policy = ShardPolicy::kRecord;
  spec.features = {"id:float:float32:scalar"};  // wrong kind
  std::string what = ErrorOf(spec);
  if (Rank() == 0) {
    EXPECT_THAT(what, HasSubstr("part-6.tfrecord"));
    EXPECT_THAT(what, HasSubstr("id"));
    EXPECT_THAT(what, HasSubstr("record=0"));
    EXPECT_THAT(what, HasSubstr("decode"));
  }
  spec.features = {"pix:bytes:uint8:" + std::to_string(kPix + 1)};  // wrong length
  what = ErrorOf(spec);
  if (Rank() == 0) {
    EXPECT_THAT(what, HasSubstr("part-6.tfrecord"));
    EXPECT_THAT(what, HasSubstr("pix"));
    EXPECT_THAT(what, HasSubstr("decode"));
  }
}

}  // namespace
}  // namespace shardflow::pipeline
