// Byte-range sharding of text lines with real ranks (mpiexec 1, 2, 4): every rank reads its
// ranges of 1001 lines in 7 awkward files (empty, one line, no trailing newline, CRLF, a line
// longer than the read buffer); rank 0 gathers every rank's lines and checks each line was
// read exactly once, and that the result does not depend on the rank count.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fstream>
#include <memory>
#include <set>

#include "io/pipeline/dataset.hpp"
#include "io/pipeline/shard_policy.hpp"
#include "io/pipeline/sources/text_line_source.hpp"
#include "tests/support/mpi_scratch.hpp"
#include "tests/support/test_paths.hpp"

namespace shardflow::pipeline {
namespace {

using shardflow::testing::SharedScratch;
int Rank() { return shardflow::testing::MpiRank(); }
int Size() { return shardflow::testing::MpiSize(); }

TEST(TextLinesMpi, ByteRangeShardingReadsEveryLineExactlyOnce) {
  SharedScratch dir("text_lines_mpi");
  const int counts[7] = {0, 1, 150, 200, 250, 200, 200};  // 1001 lines
  std::vector<std::string> files;
  for (int f = 0; f < 7; ++f) {
    files.push_back(dir / ("part-" + std::to_string(f) + ".txt"));
    if (Rank() != 0) continue;
    std::string text;
    for (int i = 0; i < counts[f]; ++i) {
      std::string line = std::to_string(f) + ":" + std::to_string(i);
      if (f == 5 && i == 17) line += std::string(70000, 'x');  // longer than the read buffer
      text += line + (f == 3 ? "\r\n" : "\n");
    }
    if (f == 2) text.pop_back();
    std::ofstream(files.back(), std::ios::binary) << text;
  }
  MPI_Barrier(MPI_COMM_WORLD);

  auto source = OpenTextLineSource(files, {.read_buffer_bytes = 4096});
  const ShardPlan plan = PlanShards(source->Files(), source->SupportsByteRanges(),
                                    ShardPolicy::kByteRange, Size(), Rank());
  ASSERT_EQ(plan.policy, ShardPolicy::kByteRange);
  PipelineIterator it = Dataset::FromRecordSource(source, plan).MakeIterator();
  Element e;
  std::string mine;  // this rank's lines, each ending in '\n' (long lines shortened)
  while (it.Next(&e)) {
    const Tensor& t = e.Get("line");
    mine.append(static_cast<const char*>(t.raw_data()), std::min<size_t>(t.byte_size(), 16));
    mine += '\n';
  }
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<size_t>(Size()));
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> displs(static_cast<size_t>(Size()), 0);
  int total = 0;
  for (int r = 0; r < Size(); ++r) {
    displs[static_cast<size_t>(r)] = total;
    total += lens[static_cast<size_t>(r)];
  }
  std::string all(static_cast<size_t>(Rank() == 0 ? total : 0), '\0');
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0,
              MPI_COMM_WORLD);
  if (Rank() != 0) return;
  std::multiset<std::string> seen;
  size_t start = 0;
  while (start < all.size()) {
    const size_t nl = all.find('\n', start);
    seen.insert(all.substr(start, nl - start));
    start = nl + 1;
  }
  std::multiset<std::string> expected;
  for (int f = 0; f < 7; ++f) {
    for (int i = 0; i < counts[f]; ++i) {
      std::string line = std::to_string(f) + ":" + std::to_string(i);
      if (f == 5 && i == 17) line += std::string(70000, 'x');
      expected.insert(line.substr(0, 16));
    }
  }
  EXPECT_EQ(seen.size(), 1001u);
  EXPECT_TRUE(seen == expected) << "ranks=" << Size();
}

}  // namespace
}  // namespace shardflow::pipeline
