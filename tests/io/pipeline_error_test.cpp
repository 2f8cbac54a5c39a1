// Errors end the iteration with file, record and stage; workers stop; nothing hangs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include "io/pipeline/shard_policy.hpp"
#include "pipeline_test_util.hpp"

namespace shardflow::pipeline {
namespace pipeline_error_test {

using testing::UnevenFiles;
using testing::WithinSeconds;

Dataset Reads(std::shared_ptr<InMemoryRecordSource> source, int reads) {
  ShardPlan plan = PlanShards(source->Files(), true, ShardPolicy::kFile, 1, 0);
  return Dataset::FromRecordSource(source, plan, {.cycle_length = 3, .num_parallel_reads = reads});
}

MapFn Identity() {
  return [](Element&, const MapContext&) {};
}

// Drains the pipeline; returns the error's text (fails when there is none).
std::string ErrorOf(const Dataset& ds, ErrorCode want, int64_t* delivered = nullptr) {
  PipelineIterator it = ds.MakeIterator();
  Element e;
  int64_t n = 0;
  try {
    while (it.Next(&e)) ++n;
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), want) << err.what();
    if (delivered) *delivered = n;
    // A failed iterator keeps failing; it does not pretend to end cleanly.
    EXPECT_THROW(it.Next(&e), Error);
    return err.what();
  }
  ADD_FAILURE() << "no error after " << n << " elements";
  return "";
}

TEST(PipelineErrors, CorruptRecordNamesFileRecordAndStage) {
  WithinSeconds(60, "corrupt record", [] {
    for (int reads : {1, 4}) {
      for (int calls : {0, 1, 4}) {
        auto source = UnevenFiles(200, 4);
        source->MarkCorrupt(2, 17);
        auto ds = Reads(source, reads)
                      .Map(Identity(), {.name = "decode", .num_parallel_calls = calls})
                      .Prefetch(2)
                      .PaddedBatch(8, false)
                      .Prefetch(2);
        const std::string what = ErrorOf(ds, ErrorCode::kDataLoss);
        EXPECT_NE(what.find("stage 'read'"), std::string::npos) << what;
        EXPECT_NE(what.find("file=mem/file2.rec"), std::string::npos) << what;
        EXPECT_NE(what.find("record=17"), std::string::npos) << what;
      }
    }
  });
}

TEST(PipelineErrors, MissingFileIsNotFound) {
  WithinSeconds(60, "missing file", [] {
    for (int reads : {1, 4}) {
      auto source = UnevenFiles(100, 3);
      source->MarkMissing(1);
      const std::string what = ErrorOf(
          Reads(source, reads).Map(Identity(), {.num_parallel_calls = 2}), ErrorCode::kNotFound);
      EXPECT_NE(what.find("mem/file1.rec"), std::string::npos) << what;
    }
  });
}

TEST(PipelineErrors, ThrowingMapFunctionNamesStageAndRecord) {
  WithinSeconds(60, "throwing map", [] {
    for (int calls : {0, 1, 2, 8}) {
      auto source = UnevenFiles(300, 3);
      auto boom = [](Element& e, const MapContext&) {
        if (e.where.file_index == 1 && e.where.record == 5) throw std::runtime_error("bad pixel");
      };
      // Where the failing element sits in the error-free sequence.
      int64_t position = 0;
      for (const auto& e : testing::Drain(Reads(source, 1))) {
        if (e.where.file_index == 1 && e.where.record == 5) break;
        ++position;
      }
      int64_t delivered = -1;
      const std::string what =
          ErrorOf(Reads(source, 1).Map(boom, {.name = "augment", .num_parallel_calls = calls}),
                  ErrorCode::kInvalidArgument, &delivered);
      EXPECT_NE(what.find("stage 'augment': bad pixel"), std::string::npos) << what;
      EXPECT_NE(what.find("file=mem/file1.rec"), std::string::npos) << what;
      EXPECT_NE(what.find("record=5"), std::string::npos) << what;
      // Deterministic: every element before the failing one was delivered first.
      EXPECT_EQ(delivered, position);
    }
  });
}

TEST(PipelineErrors, ThrowingMapInsideMapAndBatchAndInfiniteRepeat) {
  WithinSeconds(60, "map_and_batch error", [] {
    auto boom = [](Element& e, const MapContext&) {
      if (e.id == 37) throw Error(ErrorCode::kDataLoss, "cannot decode JPEG");
    };
    const std::string what =
        ErrorOf(testing::Range(100)
                    .Repeat()
                    .MapAndBatch(boom, 8, false, {.name = "decode", .num_parallel_calls = 4})
                    .Prefetch(4),
                ErrorCode::kDataLoss);
    EXPECT_NE(what.find("stage 'decode': cannot decode JPEG"), std::string::npos) << what;
    EXPECT_NE(what.find("record=37"), std::string::npos) << what;
  });
}

// A read error in the middle of a worker's run: the batches before it arrive complete and in
// order (as with the unfused map + batch), then the error with file and record.
TEST(PipelineErrors, ReadErrorInsideMapAndBatchRun) {
  WithinSeconds(60, "map_and_batch read error", [] {
    auto ids = [](Element& e, const MapContext&) {
      Tensor t(DType::kInt64, {});
      *t.data<int64_t>() = e.id;
      e.features = {{"id", t}};
    };
    auto source = UnevenFiles(300, 3);
    source->MarkCorrupt(1, 30);
    int64_t want = -1;
    const std::string plain =
        ErrorOf(Reads(source, 1).Map(ids).Batch(16, false), ErrorCode::kDataLoss, &want);
    EXPECT_NE(plain.find("record=30"), std::string::npos) << plain;
    for (int calls : {1, 2, 3, 8}) {
      SCOPED_TRACE(calls);
      int64_t got = -1;
      const std::string what =
          ErrorOf(Reads(source, 1).MapAndBatch(ids, 16, false,
                                               {.name = "decode", .num_parallel_calls = calls}),
                  ErrorCode::kDataLoss, &got);
      EXPECT_EQ(got, want);
      EXPECT_NE(what.find("file=mem/file1.rec"), std::string::npos) << what;
      EXPECT_NE(what.find("record=30"), std::string::npos) << what;
    }
  });
}

// Two elements of one batch fail in different workers' runs, the later one first (the earlier
// one's worker is held back): the error reported is the earlier element's, as map + batch
// would report it, whatever the timing.
TEST(PipelineErrors, MapAndBatchReportsTheFirstFailingElementOfABatch) {
  WithinSeconds(60, "map_and_batch error order", [] {
    for (int rep = 0; rep < 5; ++rep) {
      auto boom = [](Element& e, const MapContext&) {
        if (e.id == 2) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
          throw Error(ErrorCode::kDataLoss, "first bad element");
        }
        if (e.id == 9) throw Error(ErrorCode::kDataLoss, "second bad element");
      };
      const std::string what =
          ErrorOf(testing::Range(100).MapAndBatch(boom, 12, false,
                                                  {.name = "decode", .num_parallel_calls = 4}),
                  ErrorCode::kDataLoss);
      EXPECT_NE(what.find("first bad element"), std::string::npos) << what;
    }
  });
}

// on_data_loss (data.on_corrupt = skip): an element failing with kDataLoss is dropped from its
// batch and reported; the rows after it move up, every batch keeps its place (the same number
// of batches), the output is the same for any worker count; any other error still fails, and
// so does a batch whose every element is dropped.
TEST(PipelineErrors, MapAndBatchDropsCorruptElementsWhenAsked) {
  WithinSeconds(60, "map_and_batch drops", [] {
    const auto corrupt = [](int64_t id) { return id == 3 || id == 4 || id == 17 || id == 29; };
    auto fn = [&](Element& e, const MapContext&) {
      if (corrupt(e.id)) throw Error(ErrorCode::kDataLoss, "corrupt JPEG " + std::to_string(e.id));
    };
    const std::vector<std::vector<int64_t>> want = {{0, 1, 2, 5, 6, 7},
                                                    {8, 9, 10, 11, 12, 13, 14, 15},
                                                    {16, 18, 19, 20, 21, 22, 23},
                                                    {24, 25, 26, 27, 28}};
    for (int calls : {1, 2, 3, 8}) {
      SCOPED_TRACE(calls);
      auto dropped = std::make_shared<std::atomic<int>>(0);
      auto seen = std::make_shared<std::atomic<int>>(0);
      MapOptions o{.name = "decode", .num_parallel_calls = calls};
      o.on_data_loss = [dropped, seen](const Error& e) {
        dropped->fetch_add(1);
        if (std::string(e.what()).find("stage 'decode': corrupt JPEG") != std::string::npos) {
          seen->fetch_add(1);
        }
      };
      const auto batches = testing::Drain(testing::Range(30).MapAndBatch(fn, 8, false, o));
      ASSERT_EQ(batches.size(), want.size());
      for (size_t b = 0; b < want.size(); ++b) {
        const Tensor& x = batches[b].Get("x");
        ASSERT_EQ(x.dim(0), static_cast<int64_t>(want[b].size())) << "batch " << b;
        EXPECT_EQ(batches[b].Get("y").dim(0), x.dim(0));
        for (int64_t r = 0; r < x.dim(0); ++r) {
          const int64_t id = x.data<int64_t>()[r];
          EXPECT_EQ(id, want[b][static_cast<size_t>(r)]) << "batch " << b << " row " << r;
          EXPECT_EQ(batches[b].Get("y").data<float>()[2 * r], 2.0f * static_cast<float>(id));
        }
      }
      EXPECT_EQ(dropped->load(), 4);
      EXPECT_EQ(seen->load(), 4);
      // Another error is not skipped.
      auto wrong = [](Element& e, const MapContext&) {
        if (e.id == 5) throw Error(ErrorCode::kInvalidArgument, "wrong dtype");
      };
      ErrorOf(testing::Range(30).MapAndBatch(wrong, 8, false, o), ErrorCode::kInvalidArgument);
      // A batch of corrupt elements only (ids 4 and 5, batches of 2) fails, naming it.
      auto pair = [](Element& e, const MapContext&) {
        if (e.id == 4 || e.id == 5) throw Error(ErrorCode::kDataLoss, "corrupt JPEG");
      };
      const std::string what =
          ErrorOf(testing::Range(30).MapAndBatch(pair, 2, false, o), ErrorCode::kDataLoss);
      EXPECT_NE(what.find("every element of batch 2 (2) is corrupt"), std::string::npos) << what;
    }
  });
}

TEST(PipelineErrors, NondeterministicErrorsStillArrive) {
  WithinSeconds(60, "nondeterministic", [] {
    auto boom = [](Element& e, const MapContext&) {
      if (e.id == 500) throw std::runtime_error("boom");
    };
    ErrorOf(testing::Range(1000).Map(boom, {.num_parallel_calls = 4, .deterministic = false}),
            ErrorCode::kInvalidArgument);
  });
}

}  // namespace pipeline_error_test
}  // namespace shardflow::pipeline
