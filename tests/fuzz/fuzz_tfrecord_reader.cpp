// libFuzzer target: the TFRecord reader on arbitrary bytes, as a plain, GZIP or ZLIB file, under
// on_corrupt = fail and skip, whole-file and byte ranges. It must never crash, hang or allocate
// without bound; under skip it must account for every byte it does not return.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "io/example.hpp"
#include "io/tfrecord_reader.hpp"

using namespace shardflow;
using namespace shardflow::io;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t mode = data[0];
  const std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const char* names[] = {"f.tfrecord", "f.tfrecord.gz", "f.tfrecord.zlib"};
  const char* name = names[(mode & 3) % 3];
  MemFileSystem fs;
  fs.SetContents(name, bytes);
  TFRecordReaderOptions o;
  o.file_system = &fs;
  o.on_corrupt = (mode & 4) ? OnCorrupt::kSkip : OnCorrupt::kFail;
  o.buffer_size = (mode & 8) ? 64 : 4096;
  o.max_record_bytes = 1 << 20;
  if ((mode & 16) && (mode & 3) == 0 && !bytes.empty()) {
    o.begin = (mode >> 5) * bytes.size() / 8;
  }
  try {
    TFRecordReader reader(name, o);
    TFRecordReader::Record rec;
    ExampleView view;
    uint64_t returned = 0;
    bool end = false;
    while (true) {
      Status s = reader.TryNext(&rec, &end);
      if (!s.ok() || end) break;
      returned += rec.data.size() + 16;
      (void)ParseExample(rec.data, &view);
    }
    // Under skip on a whole plain file, returned + dropped bytes cover the file exactly.
    if (end && o.on_corrupt == OnCorrupt::kSkip && o.begin == 0 && (mode & 3) == 0 &&
        returned + reader.skipped().bytes_dropped != bytes.size()) {
      std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
