// write_tfrecords PATH N [none|gzip|zlib]: writes N deterministic tf.train.Examples with
// shardflow's writer and prints the totals an independent reader must find:
//   records=N int64_sum=S float_sum=F bytes_len=L bytes_sum=B
// Features: "id" int64 [i], "vals" int64 [i*1000-7, -i] (negative values exercise 10-byte
// varints), "x" float [i/4, -i/2] (exact in float), "blob" bytes [i % 50 bytes of value i % 256].
#include <cstdio>
#include <string>

#include "io/example.hpp"
#include "io/tfrecord_writer.hpp"

int main(int argc, char** argv) {
  using namespace shardflow::io;
  if (argc < 3) {
    std::fprintf(stderr, "usage: write_tfrecords PATH N [none|gzip|zlib]\n");
    return 2;
  }
  const std::string path = argv[1];
  const long n = std::stol(argv[2]);
  TFRecordWriterOptions options;
  options.compression = argc > 3 ? ParseCompression(argv[3]) : Compression::kAuto;
  TFRecordWriter writer(path, options);
  long long int_sum = 0, bytes_len = 0, bytes_sum = 0;
  double float_sum = 0;
  for (long i = 0; i < n; ++i) {
    const int64_t id = i, a = i * 1000 - 7, b = -i;
    const float x = static_cast<float>(i) / 4, y = -static_cast<float>(i) / 2;
    const std::string blob(static_cast<size_t>(i % 50), static_cast<char>(i % 256));
    ExampleBuilder ex;
    ex.AddInt64("id", {id}).AddInt64("vals", {a, b}).AddFloat("x", {x, y}).AddBytes("blob", {blob});
    writer.Write(ex.Serialize());
    int_sum += id + a + b;
    float_sum += static_cast<double>(x) + static_cast<double>(y);
    bytes_len += static_cast<long long>(blob.size());
    for (unsigned char c : blob) bytes_sum += c;
  }
  writer.Close();
  std::printf("records=%ld int64_sum=%lld float_sum=%.6f bytes_len=%lld bytes_sum=%lld\n", n,
              int_sum, float_sum, bytes_len, bytes_sum);
  return 0;
}
