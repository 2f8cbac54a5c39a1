// TFRecord reader and writer: round trips, and the exact outcome of each kind of damage under
// on_corrupt = fail and skip.
#include <gtest/gtest.h>
#include <zlib.h>

#include "io/crc32c.hpp"
#include "io/tfrecord_format.hpp"
#include "tests/io/tfrecord_test_util.hpp"
#include "tests/support/test_paths.hpp"

#include <fstream>

namespace shardflow::io {
namespace tfrecord_reader_test {

using test::Frame;
using test::Framed;
using test::NumberedRecords;
using test::ReadAllRecords;

TFRecordReaderOptions Opts(MemFileSystem* fs, OnCorrupt policy = OnCorrupt::kFail,
                           size_t buffer = 1 << 20, size_t read_size = 512 << 10) {
  TFRecordReaderOptions o;
  o.file_system = fs;
  o.on_corrupt = policy;
  o.buffer_size = buffer;
  o.read_size = read_size;
  return o;
}

class ReaderRoundTrip : public ::testing::TestWithParam<std::tuple<const char*, size_t>> {};

TEST_P(ReaderRoundTrip, WritesAndReadsBackEveryRecord) {
  const auto [name, buffer] = GetParam();
  MemFileSystem fs;
  std::vector<std::string> records = {"", "a", std::string(1000, 'x'), std::string(70000, 'y')};
  for (int i = 0; i < 50; ++i) records.push_back(std::string(static_cast<size_t>(i * 37), char(i)));
  {
    TFRecordWriterOptions w;
    w.file_system = &fs;
    TFRecordWriter writer(name, w);
    for (const auto& r : records) writer.Write(r);
    writer.Close();
    EXPECT_EQ(writer.records_written(), static_cast<int64_t>(records.size()));
  }
  auto result = ReadAllRecords(name, Opts(&fs, OnCorrupt::kFail, buffer));
  ASSERT_TRUE(result.status.ok()) << result.status.ToString();
  EXPECT_EQ(result.records, records);
  for (size_t i = 0; i < records.size(); ++i) EXPECT_EQ(result.indices[i], static_cast<int64_t>(i));
  if (std::string(name) == "plain.tfrecord") {
    EXPECT_EQ(fs.Contents(name), Frame(records).bytes);
  }
}

INSTANTIATE_TEST_SUITE_P(Compressions, ReaderRoundTrip,
                         ::testing::Combine(::testing::Values("plain.tfrecord", "c.tfrecord.gz",
                                                              "c.tfrecord.zlib"),
                                            ::testing::Values(size_t{64}, size_t{1} << 20)));

TEST(TFRecordReader, RecordViewsPointIntoTheBuffer) {
  MemFileSystem fs;
  Framed f = Frame(NumberedRecords(3));
  fs.SetContents("f", f.bytes);
  TFRecordReader reader("f", Opts(&fs));
  TFRecordReader::Record rec;
  ASSERT_TRUE(reader.Next(&rec));
  TFRecordReader::Record rec2;
  ASSERT_TRUE(reader.Next(&rec2));
  // Consecutive records in one buffer are 16 framing bytes apart: no copies.
  EXPECT_EQ(rec2.data.data(), rec.data.data() + rec.data.size() + 16);
}

TEST(TFRecordReader, EmptyFileIsACleanEnd) {
  MemFileSystem fs;
  fs.SetContents("empty", "");
  auto r = ReadAllRecords("empty", Opts(&fs));
  EXPECT_TRUE(r.status.ok());
  EXPECT_TRUE(r.records.empty());
  TFRecordReader reader("empty", Opts(&fs));
  TFRecordReader::Record rec;
  EXPECT_FALSE(reader.Next(&rec));
  EXPECT_FALSE(reader.Next(&rec));
}

struct DamageCase {
  const char* name;
  // Returns the damaged file from the intact one.
  std::function<std::string(const Framed&)> damage;
  std::string message;
  int bad_record;              // index reported; its offset is the record's (or the file size)
  int64_t recovered;           // records read under skip
  uint64_t bytes_dropped;      // under skip
  int delivered_before_error;  // records read under fail before the error
};

Framed FiveRecords() { return Frame(NumberedRecords(5)); }

std::string Flip(std::string s, size_t pos, int bit = 0) {
  s[pos] = static_cast<char>(s[pos] ^ (1 << bit));
  return s;
}

// Records larger than one read and than the buffer: the data CRC is extended piece by piece as
// the reads arrive (and across buffer slides and growth); contents, offsets and a damaged byte
// in any piece are still found exactly.
TEST(TFRecordReaderChunked, LargeRecordsAcrossReadsAndBufferGrowth) {
  std::vector<std::string> records;
  for (size_t n : {size_t{0}, size_t{300000}, size_t{1}, size_t{70001}, size_t{65536}, size_t{5}}) {
    std::string r(n, '\0');
    for (size_t i = 0; i < n; ++i) r[i] = static_cast<char>((i * 131 + n) & 0xff);
    records.push_back(r);
  }
  const Framed f = Frame(records);
  for (auto [buffer, read_size] : {std::pair<size_t, size_t>{64, 64},
                                   {4096, 1000},
                                   {size_t{1} << 20, size_t{256} << 10},
                                   {size_t{1} << 20, 4097}}) {
    MemFileSystem fs;
    fs.SetContents("c.tfrecord", f.bytes);
    auto all = ReadAllRecords("c.tfrecord", Opts(&fs, OnCorrupt::kFail, buffer, read_size));
    ASSERT_TRUE(all.status.ok()) << all.status.ToString();
    EXPECT_EQ(all.records, records) << buffer << "/" << read_size;
    EXPECT_EQ(all.offsets, f.offsets);
    // Damage record 1 near its end (a late piece) and check the error and the skip.
    std::string bad = f.bytes;
    bad[f.offsets[1] + 12 + 299000] ^= 0x40;
    fs.SetContents("c.tfrecord", bad);
    auto fail = ReadAllRecords("c.tfrecord", Opts(&fs, OnCorrupt::kFail, buffer, read_size));
    EXPECT_EQ(fail.status.code(), ErrorCode::kDataLoss);
    EXPECT_EQ(fail.status.message(), "corrupted record: bad data CRC");
    EXPECT_EQ(fail.status.context().offset, f.offsets[1]);
    EXPECT_EQ(fail.records.size(), 1u);
    auto skip = ReadAllRecords("c.tfrecord", Opts(&fs, OnCorrupt::kSkip, buffer, read_size));
    ASSERT_TRUE(skip.status.ok()) << skip.status.ToString();
    EXPECT_EQ(skip.records.size(), records.size() - 1);
    EXPECT_EQ(skip.skipped.records_dropped, 1);
    EXPECT_EQ(skip.skipped.bytes_dropped, f.offsets[2] - f.offsets[1]);
  }
}

// A reader reuses the (grown) buffer of the previous one on the same thread: the bytes left in
// it from a file of large records never leak into the next file's records or its end.
TEST(TFRecordReaderChunked, ReusedBufferStartsClean) {
  MemFileSystem fs;
  fs.SetContents("big.tfrecord", Frame({std::string(200000, 'b'), std::string(3, 'c')}).bytes);
  const Framed small = Frame({"x", "", "yz"});
  fs.SetContents("small.tfrecord", small.bytes);
  fs.SetContents("cut.tfrecord", small.bytes.substr(0, small.bytes.size() - 2));
  for (int round = 0; round < 2; ++round) {
    auto big = ReadAllRecords("big.tfrecord", Opts(&fs, OnCorrupt::kFail, 4096, 1000));
    ASSERT_TRUE(big.status.ok());
    EXPECT_EQ(big.records.size(), 2u);
    auto r = ReadAllRecords("small.tfrecord", Opts(&fs, OnCorrupt::kFail, 4096, 1000));
    ASSERT_TRUE(r.status.ok());
    EXPECT_EQ(r.records, small.records);
    auto cut = ReadAllRecords("cut.tfrecord", Opts(&fs, OnCorrupt::kFail, 4096, 1000));
    EXPECT_EQ(cut.status.code(), ErrorCode::kDataLoss);
    EXPECT_EQ(cut.records.size(), 2u);
  }
}

class Damage : public ::testing::TestWithParam<DamageCase> {};

TEST_P(Damage, FailReportsExactlyAndSkipRecovers) {
  const DamageCase& c = GetParam();
  const Framed f = FiveRecords();
  const std::string bad = c.damage(f);
  // (buffer, read size): tiny buffer; default; reads far smaller than the buffer, so records
  // arrive (and their CRC is extended) in many pieces.
  for (auto [buffer, read_size] : {std::pair<size_t, size_t>{64, 64},
                                   {size_t{1} << 20, size_t{256} << 10},
                                   {size_t{1} << 20, 7},
                                   {4096, 100}}) {
    MemFileSystem fs;
    fs.SetContents("d.tfrecord", bad);
    auto fail = ReadAllRecords("d.tfrecord", Opts(&fs, OnCorrupt::kFail, buffer, read_size));
    ASSERT_FALSE(fail.status.ok()) << c.name;
    EXPECT_EQ(fail.status.code(), ErrorCode::kDataLoss);
    EXPECT_EQ(fail.status.message(), c.message) << c.name;
    EXPECT_EQ(fail.status.context().file, "d.tfrecord");
    const uint64_t want_offset =
        c.bad_record < 5 ? f.offsets[static_cast<size_t>(c.bad_record)] : f.bytes.size();
    EXPECT_EQ(fail.status.context().offset, want_offset) << c.name;
    EXPECT_EQ(fail.status.context().record, c.bad_record) << c.name;
    EXPECT_EQ(static_cast<int>(fail.records.size()), c.delivered_before_error) << c.name;

    auto skip = ReadAllRecords("d.tfrecord", Opts(&fs, OnCorrupt::kSkip, buffer, read_size));
    ASSERT_TRUE(skip.status.ok()) << skip.status.ToString();
    EXPECT_EQ(static_cast<int64_t>(skip.records.size()), c.recovered) << c.name;
    EXPECT_EQ(skip.skipped.records_dropped, 1) << c.name;
    EXPECT_EQ(skip.skipped.bytes_dropped, c.bytes_dropped) << c.name;
    for (size_t i = 0; i < skip.records.size(); ++i) {
      const auto idx = static_cast<size_t>(skip.indices[i]);
      EXPECT_EQ(skip.records[i], f.records[idx]) << c.name;  // indices stay the file's
      EXPECT_EQ(skip.offsets[i], f.offsets[idx]);
    }
  }
}

uint64_t RecordSize(const Framed& f, int i) {
  const size_t k = static_cast<size_t>(i);
  return (k + 1 < f.offsets.size() ? f.offsets[k + 1] : f.bytes.size()) - f.offsets[k];
}

std::vector<DamageCase> DamageCases() {
  const Framed f = FiveRecords();
  const uint64_t r2 = f.offsets[2];
  return {
      {"flipped data bit", [r2](const Framed& g) { return Flip(g.bytes, r2 + 12 + 3, 5); },
       "corrupted record: bad data CRC", 2, 4, RecordSize(f, 2), 2},
      {"flipped length bit", [r2](const Framed& g) { return Flip(g.bytes, r2 + 1); },
       "corrupted record: bad length CRC", 2, 4, RecordSize(f, 2), 2},
      {"flipped length CRC bit", [r2](const Framed& g) { return Flip(g.bytes, r2 + 9, 7); },
       "corrupted record: bad length CRC", 2, 4, RecordSize(f, 2), 2},
      {"flipped data CRC bit", [f](const Framed& g) { return Flip(g.bytes, f.offsets[3] - 2, 3); },
       "corrupted record: bad data CRC", 2, 4, RecordSize(f, 2), 2},
      {"truncated header", [](const Framed& g) { return g.bytes + std::string("\x05\0\0\0\0", 5); },
       "truncated record header: the file ends 5 bytes into the 12-byte header", 5, 5, 5, 5},
      {"truncated data", [](const Framed& g) { return g.bytes.substr(0, g.bytes.size() - 10); },
       "truncated record: header announces " + std::to_string(f.records[4].size()) +
           " data bytes, the file ends " + std::to_string(f.records[4].size() + 4 - 10) +
           " bytes after the header",
       4, 4, RecordSize(f, 4) - 10, 4},
      {"trailing garbage",
       [](const Framed& g) { return g.bytes + "this is not a TFRecord header"; },
       "corrupted record: bad length CRC", 5, 5, 29, 5},
  };
}

// The same damage read from real files, mapped and read through the buffer, and in byte ranges:
// identical outcomes.
TEST_P(Damage, MappedAndBufferedPosixReadsAgree) {
  const DamageCase& c = GetParam();
  testing::ScratchDir dir("damage_mmap");
  const std::string path = (dir / "d.tfrecord").string();
  {
    std::ofstream out(path, std::ios::binary);
    const std::string bad = c.damage(FiveRecords());
    out.write(bad.data(), static_cast<std::streamsize>(bad.size()));
  }
  for (OnCorrupt policy : {OnCorrupt::kFail, OnCorrupt::kSkip}) {
    TFRecordReaderOptions o;
    o.on_corrupt = policy;
    o.buffer_size = 64;
    const auto buffered = ReadAllRecords(path, o);
    o.use_mmap = true;
    const auto mapped = ReadAllRecords(path, o);
    EXPECT_EQ(mapped.records, buffered.records) << c.name;
    EXPECT_EQ(mapped.status.ToString(), buffered.status.ToString()) << c.name;
    EXPECT_EQ(mapped.skipped.bytes_dropped, buffered.skipped.bytes_dropped) << c.name;
    o.begin = 30;
    o.use_mmap = false;
    const auto ranged = ReadAllRecords(path, o);
    o.use_mmap = true;
    const auto ranged_mapped = ReadAllRecords(path, o);
    EXPECT_EQ(ranged.records, ranged_mapped.records) << c.name;
    EXPECT_EQ(ranged.status.ToString(), ranged_mapped.status.ToString()) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllKinds, Damage, ::testing::ValuesIn(DamageCases()),
                         [](const auto& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return n;
                         });

std::string HeaderWithLength(uint64_t length) {
  char h[12];
  tfrecord::EncodeFixed64(h, length);
  tfrecord::EncodeFixed32(h + 8, crc32c::Mask(crc32c::Value(h, 8)));
  return std::string(h, 12);
}

TEST(TFRecordReader, HugeLengthIsCorruptionNotAnAllocation) {
  const Framed f = FiveRecords();
  const std::string huge = HeaderWithLength(uint64_t{1} << 60) + "some bytes after";
  const std::string bad = f.bytes.substr(0, f.offsets[3]) + huge + f.bytes.substr(f.offsets[3]);
  const std::string want =
      "corrupted record: length 1152921504606846976 exceeds max_record_bytes (2147483648)";
  for (const char* name : {"h.tfrecord", "h.tfrecord.gz"}) {
    MemFileSystem fs;
    if (std::string(name) == "h.tfrecord") {
      fs.SetContents(name, bad);
    } else {
      TFRecordWriterOptions w;
      w.file_system = &fs;
      auto out = fs.NewWritableFile(name);
      DeflatingFile gz(std::move(out), Compression::kGzip);
      ThrowIfError(gz.Append(bad));
      ThrowIfError(gz.Close());
    }
    auto fail = ReadAllRecords(name, Opts(&fs));
    EXPECT_EQ(fail.status.message(), want) << name;
    EXPECT_EQ(fail.status.context().offset, f.offsets[3]);
    EXPECT_EQ(fail.status.context().record, 3);
    EXPECT_EQ(fail.records.size(), 3u);
    auto skip = ReadAllRecords(name, Opts(&fs, OnCorrupt::kSkip));
    ASSERT_TRUE(skip.status.ok());
    EXPECT_EQ(skip.records, f.records) << name;
    EXPECT_EQ(skip.skipped.records_dropped, 1);
    EXPECT_EQ(skip.skipped.bytes_dropped, huge.size());
  }
}

TEST(TFRecordReader, SkipCountsSeveralDamagedRecordsAndReports) {
  struct Collect : CorruptionReporter {
    std::vector<std::pair<uint64_t, std::string>> events;
    void Corruption(uint64_t bytes, const Status& reason) override {
      events.emplace_back(bytes, reason.message());
    }
  } reporter;
  const Framed f = Frame(NumberedRecords(10));
  std::string bad = Flip(f.bytes, f.offsets[1] + 14);  // data of record 1
  bad = Flip(bad, f.offsets[5] + 3);                   // length of record 5
  bad = Flip(bad, f.offsets[6] + 3);                   // length of record 6 too
  MemFileSystem fs;
  fs.SetContents("m", bad);
  auto o = Opts(&fs, OnCorrupt::kSkip, 64);
  o.reporter = &reporter;
  auto r = ReadAllRecords("m", o);
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.records.size(), 7u);
  EXPECT_EQ(r.skipped.records_dropped, 2);  // record 1; records 5+6 are one damaged region
  EXPECT_EQ(r.skipped.bytes_dropped, RecordSize(f, 1) + RecordSize(f, 5) + RecordSize(f, 6));
  ASSERT_EQ(reporter.events.size(), 2u);
  EXPECT_EQ(reporter.events[0].second, "corrupted record: bad data CRC");
  EXPECT_EQ(reporter.events[1].first, RecordSize(f, 5) + RecordSize(f, 6));
}

TEST(TFRecordReader, InjectedReadErrorSurfacesAsIoAfterTheGoodRecords) {
  const Framed f = FiveRecords();
  MemFileSystem fs;
  fs.SetContents("io", f.bytes);
  fs.InjectReadError("io", f.offsets[3] + 5);
  auto r = ReadAllRecords("io", Opts(&fs, OnCorrupt::kSkip, 64));
  EXPECT_EQ(r.status.code(), ErrorCode::kIo);
  EXPECT_EQ(r.status.message(), "injected read error");
  EXPECT_EQ(r.records.size(), 3u);
}

// Naive twin for the cut-short test: inflate as much of the prefix as zlib can.
size_t InflatablePrefix(const std::string& gz) {
  z_stream z{};
  inflateInit2(&z, 16 + MAX_WBITS);
  std::string out(1 << 20, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
  z.avail_in = static_cast<uInt>(gz.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  inflate(&z, Z_SYNC_FLUSH);
  const size_t n = out.size() - z.avail_out;
  inflateEnd(&z);
  return n;
}

TEST(TFRecordReader, GzipStreamCutShort) {
  MemFileSystem fs;
  std::vector<std::string> records;
  for (int i = 0; i < 200; ++i)
    records.push_back(std::string(500, static_cast<char>('a' + i % 26)) + std::to_string(i * 7919));
  {
    TFRecordWriterOptions w;
    w.file_system = &fs;
    TFRecordWriter writer("full.tfrecord.gz", w);
    for (const auto& r : records) writer.Write(r);
  }
  const std::string full = fs.Contents("full.tfrecord.gz");
  const std::string cut = full.substr(0, full.size() / 2);
  fs.SetContents("cut.tfrecord.gz", cut);
  const size_t inflatable = InflatablePrefix(cut);
  const Framed framed = Frame(records);
  size_t complete = 0;
  while (complete < records.size() &&
         framed.offsets[complete] + 16 + records[complete].size() <= inflatable)
    ++complete;
  for (OnCorrupt policy : {OnCorrupt::kFail, OnCorrupt::kSkip}) {
    auto r = ReadAllRecords("cut.tfrecord.gz", Opts(&fs, policy, 4096));
    EXPECT_EQ(r.status.code(), ErrorCode::kDataLoss);
    EXPECT_EQ(r.status.message(), "GZIP stream cut short");
    EXPECT_EQ(r.status.context().offset, cut.size());
    EXPECT_EQ(r.records.size(), complete);
    EXPECT_GT(complete, 0u);
  }
  // A damaged byte in the middle of the stream.
  std::string garbled = full;
  for (size_t i = full.size() / 2; i < full.size() / 2 + 64; ++i)
    garbled[i] = static_cast<char>(0xff);
  fs.SetContents("garbled.tfrecord.gz", garbled);
  auto g = ReadAllRecords("garbled.tfrecord.gz", Opts(&fs));
  EXPECT_EQ(g.status.code(), ErrorCode::kDataLoss);
  EXPECT_NE(g.status.message().find("GZIP"), std::string::npos) << g.status.message();
}

TEST(TFRecordReader, CompressionByOptionOverridesSuffix) {
  MemFileSystem fs;
  TFRecordWriterOptions w;
  w.file_system = &fs;
  w.compression = Compression::kZlib;
  {
    TFRecordWriter writer("noext", w);
    writer.Write("hello");
  }
  auto o = Opts(&fs);
  auto plain = ReadAllRecords("noext", o);
  EXPECT_FALSE(plain.status.ok());
  o.compression = Compression::kZlib;
  auto z = ReadAllRecords("noext", o);
  ASSERT_TRUE(z.status.ok());
  EXPECT_EQ(z.records, std::vector<std::string>{"hello"});
  EXPECT_THROW(ParseCompression("lz4"), Error);
  EXPECT_EQ(ParseCompression("GZIP"), Compression::kGzip);
}

TEST(TFRecordReader, ByteRangeOnCompressedFileIsRefused) {
  MemFileSystem fs;
  fs.SetContents("x.gz", "");
  auto o = Opts(&fs);
  o.begin = 10;
  EXPECT_THROW(TFRecordReader("x.gz", o), Error);
}

}  // namespace tfrecord_reader_test
}  // namespace shardflow::io
