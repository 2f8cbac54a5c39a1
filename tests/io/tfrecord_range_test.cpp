// Byte-range splitting: any set of [begin, end) ranges covering a file reads every record
// exactly once, including records whose data contains header-like bytes and whole embedded
// records.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "io/crc32c.hpp"
#include "io/tfrecord_format.hpp"
#include "tests/io/tfrecord_test_util.hpp"

namespace shardflow::io {
namespace tfrecord_range_test {

using test::Frame;
using test::Framed;

// Record data that tries to look like framing: a valid header for a length that does not fit,
// a whole embedded record followed by noise, or plain random bytes.
std::string AdversarialRecord(std::mt19937& rng, int i) {
  std::uniform_int_distribution<int> len(0, 300);
  std::string noise(static_cast<size_t>(len(rng)), '\0');
  for (char& c : noise) c = static_cast<char>(rng());
  std::string data;
  switch (i % 4) {
    case 0: {  // a valid-CRC header announcing a short length, inside random bytes
      char h[12];
      tfrecord::EncodeFixed64(h, 5);
      tfrecord::EncodeFixed32(h + 8, crc32c::Mask(crc32c::Value(h, 8)));
      data =
          noise.substr(0, noise.size() / 2) + std::string(h, 12) + noise.substr(noise.size() / 2);
      break;
    }
    case 1: {  // a complete embedded record followed by at least one byte of noise
      std::string inner;
      AppendTFRecord("embedded-" + std::to_string(i), &inner);
      data = noise.substr(0, noise.size() / 3) + inner + "!" + noise.substr(noise.size() / 3);
      break;
    }
    case 2:
      data = noise;
      break;
    default:
      data = "";  // empty records are legal
  }
  return data;
}

std::multiset<uint64_t> ReadRanges(MemFileSystem& fs, const std::string& path,
                                   const std::vector<uint64_t>& cuts, size_t buffer) {
  std::multiset<uint64_t> seen;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    TFRecordReaderOptions o;
    o.file_system = &fs;
    o.begin = cuts[k];
    o.end = cuts[k + 1];
    o.buffer_size = buffer;
    TFRecordReader reader(path, o);
    TFRecordReader::Record rec;
    while (reader.Next(&rec)) {
      EXPECT_GE(rec.offset, cuts[k]);
      EXPECT_LT(rec.offset, cuts[k + 1]);
      seen.insert(rec.offset);
    }
  }
  return seen;
}

TEST(TFRecordRanges, RandomSplitsReadEveryRecordExactlyOnce) {
  std::mt19937 rng(12345);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::string> records;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i)
      records.push_back(AdversarialRecord(rng, static_cast<int>(rng() % 4)));
    const Framed f = Frame(records);
    MemFileSystem fs;
    fs.SetContents("r", f.bytes);
    const std::multiset<uint64_t> want(f.offsets.begin(), f.offsets.end());
    for (int ranks = 1; ranks <= 7; ++ranks) {
      std::vector<uint64_t> cuts = {0};
      for (int k = 1; k < ranks; ++k)
        cuts.push_back(f.bytes.empty() ? 0 : rng() % (f.bytes.size() + 1));
      std::sort(cuts.begin() + 1, cuts.end());
      // The last range may end at the file size or anywhere beyond.
      cuts.push_back(rng() % 2 ? f.bytes.size() : UINT64_MAX);
      const size_t buffer = rng() % 2 ? 64 : 1 << 20;
      ASSERT_EQ(ReadRanges(fs, "r", cuts, buffer), want)
          << "trial " << trial << " ranks " << ranks << " n " << n;
    }
  }
}

TEST(TFRecordRanges, EvenSplitsAndEveryCutPointOfASmallFile) {
  std::mt19937 rng(99);
  std::vector<std::string> records;
  for (int i = 0; i < 12; ++i) records.push_back(AdversarialRecord(rng, i));
  const Framed f = Frame(records);
  MemFileSystem fs;
  fs.SetContents("s", f.bytes);
  const std::multiset<uint64_t> want(f.offsets.begin(), f.offsets.end());
  for (uint64_t cut = 0; cut <= f.bytes.size(); ++cut) {
    ASSERT_EQ(ReadRanges(fs, "s", {0, cut, f.bytes.size()}, 1 << 20), want) << "cut " << cut;
  }
}

TEST(TFRecordRanges, EmptyRangesAndRangesPastTheEnd) {
  const Framed f = Frame(test::NumberedRecords(4));
  MemFileSystem fs;
  fs.SetContents("e", f.bytes);
  const std::multiset<uint64_t> none;
  EXPECT_EQ(ReadRanges(fs, "e", {5, 5}, 64), none);
  EXPECT_EQ(ReadRanges(fs, "e", {f.bytes.size(), f.bytes.size() + 100}, 64), none);
  TFRecordReaderOptions o;
  o.file_system = &fs;
  o.begin = 10;
  o.end = 5;
  EXPECT_THROW(TFRecordReader("e", o), Error);
}

TEST(TFRecordRanges, DamageAfterASplitIsReportedOnceByTheEarlierRange) {
  const Framed f = Frame(test::NumberedRecords(6));
  std::string bad = f.bytes;
  bad[f.offsets[3] + 2] ^= 1;  // length of record 3
  MemFileSystem fs;
  fs.SetContents("d", bad);
  const uint64_t cut = f.offsets[3] - 3;  // inside record 2: record 3 starts in the second range
  int64_t dropped = 0, read = 0;
  for (auto [b, e] : {std::pair<uint64_t, uint64_t>{0, cut}, {cut, bad.size()}}) {
    TFRecordReaderOptions o;
    o.file_system = &fs;
    o.begin = b;
    o.end = e;
    o.on_corrupt = OnCorrupt::kSkip;
    TFRecordReader reader("d", o);
    TFRecordReader::Record rec;
    while (reader.Next(&rec)) ++read;
    dropped += reader.skipped().records_dropped;
  }
  EXPECT_EQ(read, 5);
  EXPECT_EQ(dropped, 1);
  // Under fail, the first range (whose last record is followed by the damage) reports it.
  TFRecordReaderOptions o;
  o.file_system = &fs;
  o.end = f.offsets[3];
  TFRecordReader first("d", o);
  TFRecordReader::Record rec;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(first.Next(&rec));
  EXPECT_THROW(first.Next(&rec), Error);
}

}  // namespace tfrecord_range_test
}  // namespace shardflow::io
