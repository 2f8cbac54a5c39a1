// shardflow-bench image: the ImageNet-class image pipeline's rate (issue 49).
//
//   shardflow-bench image [--source DIR] [--work DIR] [--images 256] [--long-side 500] [--grain 32]
//                         [--threads 1,2] [--epochs 2] [--size 224] [--memory-epochs N]
//                         [--only decode|fused|unfused|folder] [--corpus-only] [--json]
//
// A corpus first, made once in --work (default /tmp/shardflow-image-corpus; reused when its
// corpus.json says the same --images, --long-side and --source): JPEGs in 8 class folders
// work/images/classK/, each a crop of one of the photographs under --source (default
// /usr/share/wallpapers: Debian's plasma-workspace-wallpapers) at ImageNet's sizes (long side 500,
// short side 333-375, three in four landscape; the crop covers 30-100% of the photo's short side),
// resized bilinearly, given a camera's grain (--grain levels of Gaussian luminance noise: the
// default brings the mean JPEG to ImageNet's ~110 KB, which the smooth wallpapers alone reach a
// third of) and encoded at quality 90, as ImageNet's validation JPEGs are on average; and
// the same files' bytes in 4 TFRecord shards, work/shards/img-*.tfrecord (image/encoded, label:
// what shardflow-convert --input.format=images writes); and beside it the JPEGs of the wild,
// work/wild/mixed/ (progressive, grey, CMYK, 4:4:4, EXIF-rotated, one cut short, one corrupt),
// which every run puts through the training pipeline (CheckWildSet). --corpus-only stops
// there (tests make small corpora with --long-side). Then per thread count T, over --epochs passes:
//   decode only:  DecodeJpeg of every file's bytes (held in memory), on T threads: the
//                 ceiling the machine's libjpeg-turbo sets;
//   fused:        the TFRecord shards -> random_resized_crop:SxS (the decode fused into the
//                 crop: only the window is decoded, DCT-downscaled when it can be),
//                 random_flip, normalize with ImageNet's means and stds -> batches of 64,
//                 data.parallel_calls = T (the real input pipeline, files read from the page
//                 cache);
//   unfused:      the same with data.fuse_decode_crop = false (decode whole, then crop);
//   folder:       fused, from the image folder (a file per image) instead of the shards.
// --memory-epochs N then runs the fused pipeline N passes at the largest thread count and
// prints the resident memory after each pass and its growth from the first to the last.
// It prints images/s, per thread, and the fused rate / (decode-only rate), and the process's
// peak resident memory. It checks every batch's shape and that each epoch yields every image.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "apps/bench/bench_flags.hpp"
#include "apps/bench/bench_registry.hpp"
#include "core/error.hpp"
#include "io/example.hpp"
#include "io/pipeline/block_pool.hpp"
#include "io/pipeline/input_pipeline.hpp"
#include "io/pipeline/ops/image_augment.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/sources/source_counters.hpp"
#include "io/tfrecord_writer.hpp"

namespace shardflow::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The camera grain (--grain) that brings the corpus to ImageNet's bytes per JPEG (about 110 KB
// at long side 500, quality 90): wallpapers downscaled to 500x375 are smoother than ImageNet's
// photographs, and a JPEG's decode time follows its coded bits.
constexpr double kDefaultGrain = 32;

struct ImageArgs {
  std::string source = "/usr/share/wallpapers";
  std::string work = "/tmp/shardflow-image-corpus";
  int images = 256;
  std::vector<int> threads{1, 2};
  int epochs = 2;
  int size = 224;
  int long_side = 500;
  double grain = kDefaultGrain;
  int memory_epochs = 0;
  bool corpus_only = false;
  std::string only;  // --only PHASE: run that phase alone (decode, fused, unfused, folder; perf)
  bool json = false;
};

// What a corpus in --work was made with: it is reused only when they match.
std::string CorpusStamp(const ImageArgs& a) {
  return nlohmann::json{
      {"images", a.images}, {"long_side", a.long_side}, {"grain", a.grain}, {"source", a.source}}
      .dump();
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The corpus' files, sorted; empty when --work does not hold the corpus these flags make.
std::vector<fs::path> CorpusFiles(const ImageArgs& a) {
  std::vector<fs::path> files;
  if (!fs::is_directory(a.work) || ReadFile(fs::path(a.work) / "corpus.json") != CorpusStamp(a)) {
    return files;
  }
  for (const auto& e : fs::recursive_directory_iterator(fs::path(a.work) / "images")) {
    if (e.is_regular_file() && e.path().extension() == ".jpg") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (static_cast<int>(files.size()) != a.images) files.clear();
  return files;
}

// uint8 [h, w, 3] from a float RGB image in [0, 255], with a camera's grain: per pixel a
// Gaussian luminance deviation of `grain` levels on all three channels and a third of it on
// each channel alone.
Tensor ToBytes(const Tensor& f, double grain, std::mt19937_64& rng) {
  Tensor out(DType::kUInt8, f.shape());
  const float* x = f.data<float>();
  uint8_t* y = out.data<uint8_t>();
  std::normal_distribution<float> luma(0, static_cast<float>(grain));
  std::normal_distribution<float> chroma(0, static_cast<float>(grain / 3));
  const int64_t channels = f.dim(2);
  for (int64_t p = 0; p < f.num_elements(); p += channels) {
    const float l = grain > 0 ? luma(rng) : 0.0f;
    for (int64_t c = 0; c < channels; ++c) {
      const float v = x[p + c] + l + (grain > 0 ? chroma(rng) : 0.0f);
      y[p + c] = static_cast<uint8_t>(std::clamp(std::lround(v), 0L, 255L));
    }
  }
  return out;
}

std::vector<fs::path> MakeCorpus(const ImageArgs& a) {
  std::vector<fs::path> photos;
  if (fs::is_directory(a.source)) {
    for (const auto& e : fs::recursive_directory_iterator(a.source)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".jpg" || ext == ".jpeg")) photos.push_back(e.path());
    }
  }
  if (photos.empty()) {
    throw Error(ErrorCode::kNotFound, "no JPEG photographs under --source " + a.source,
                {.hint = "apt-get install plasma-workspace-wallpapers, or --source DIR"});
  }
  std::sort(photos.begin(), photos.end());
  fs::remove_all(a.work);
  std::mt19937_64 rng(49);
  size_t total = 0;
  for (int i = 0; i < a.images; ++i) {
    // Decoded one at a time (a 5120x2880 photograph is 44 MB decoded): the bench's peak
    // memory is then the pipeline's, not the corpus maker's.
    const std::string source = ReadFile(photos[static_cast<size_t>(i) % photos.size()]);
    const Tensor photo =
        pipeline::DecodeJpeg(reinterpret_cast<const uint8_t*>(source.data()), source.size(), 3);
    const bool landscape = std::uniform_int_distribution<int>(0, 3)(rng) != 0;
    // ImageNet's: long side 500, short side 333-375.
    const int64_t long_side = a.long_side;
    const int64_t short_side =
        std::max<int64_t>(1, long_side * std::uniform_int_distribution<int>(333, 375)(rng) / 500);
    const int64_t oh = landscape ? short_side : long_side, ow = landscape ? long_side : short_side;
    const int64_t ph = photo.dim(0), pw = photo.dim(1);
    // A window of the output's aspect covering 30-100% of what fits in the photo.
    const double fit = std::min(static_cast<double>(ph) / oh, static_cast<double>(pw) / ow);
    const double f = fit * std::uniform_real_distribution<double>(0.3, 1.0)(rng);
    const int64_t ch = std::max<int64_t>(1, static_cast<int64_t>(oh * f));
    const int64_t cw = std::max<int64_t>(1, static_cast<int64_t>(ow * f));
    const int64_t top = std::uniform_int_distribution<int64_t>(0, ph - ch)(rng);
    const int64_t left = std::uniform_int_distribution<int64_t>(0, pw - cw)(rng);
    const Tensor crop = pipeline::CropImage(photo, top, left, ch, cw);
    const std::string jpeg =
        pipeline::EncodeJpeg(ToBytes(pipeline::ResizeBilinear(crop, oh, ow), a.grain, rng), 90);
    const fs::path dir = fs::path(a.work) / "images" / ("class" + std::to_string(i % 8));
    fs::create_directories(dir);
    char name[32];
    std::snprintf(name, sizeof(name), "img%05d.jpg", i);
    std::ofstream(dir / name, std::ios::binary) << jpeg;
    total += jpeg.size();
  }
  std::ofstream(fs::path(a.work) / "corpus.json") << CorpusStamp(a);
  std::printf("corpus: %d JPEGs in %s from %zu photographs under %s, mean %.1f KB\n", a.images,
              a.work.c_str(), photos.size(), a.source.c_str(),
              static_cast<double>(total) / a.images / 1024);
  return CorpusFiles(a);
}

// `jpeg` with an Exif APP1 segment after its start marker whose one IFD entry is Orientation
// (0x0112) = 6: a camera turned 90 degrees. Decoders here, as tf.image's and torchvision's,
// keep the stored pixels.
std::string WithExifRotation(const std::string& jpeg) {
  std::string tiff("II*\0\x08\0\0\0\x01\0\x12\x01\x03\0\x01\0\0\0\x06\0\0\0\0\0\0\0", 26);
  const std::string payload = std::string("Exif\0\0", 6) + tiff;
  std::string segment("\xFF\xE1", 2);
  segment += static_cast<char>((payload.size() + 2) >> 8);
  segment += static_cast<char>((payload.size() + 2) & 0xFF);
  return jpeg.substr(0, 2) + segment + payload + jpeg.substr(2);
}

// The JPEGs of the wild beside the corpus, in work/wild/mixed/ (made from the corpus' first
// image): progressive, greyscale, CMYK (Adobe), 4:4:4, EXIF-rotated, which every decoder must
// read, and one cut short and one with garbage past its header, which a run must stop at or
// skip and count. Returns how many of them decode.
int MakeWildSet(const ImageArgs& a, const fs::path& first) {
  const std::string bytes = ReadFile(first);
  const Tensor rgb =
      pipeline::DecodeJpeg(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), 3);
  Tensor cmyk(DType::kUInt8, {rgb.dim(0), rgb.dim(1), 4});
  for (int64_t p = 0; p < rgb.dim(0) * rgb.dim(1); ++p) {
    for (int k = 0; k < 3; ++k) cmyk.data<uint8_t>()[p * 4 + k] = rgb.data<uint8_t>()[p * 3 + k];
    cmyk.data<uint8_t>()[p * 4 + 3] = 255;  // inverted (Adobe): no black
  }
  const fs::path dir = fs::path(a.work) / "wild" / "mixed";
  fs::create_directories(dir);
  const auto write = [&](const char* name, const std::string& jpeg) {
    std::ofstream(dir / name, std::ios::binary) << jpeg;
  };
  write("progressive.jpg", pipeline::EncodeJpeg(rgb, {.progressive = true}));
  write("grey.jpg", pipeline::EncodeJpeg(pipeline::ConvertImageChannels(rgb, 1)));
  write("cmyk.jpg", pipeline::EncodeJpeg(cmyk));
  write("full-chroma.jpg", pipeline::EncodeJpeg(rgb, {.h_samp = 1, .v_samp = 1}));
  write("exif-rotated.jpg", WithExifRotation(pipeline::EncodeJpeg(rgb)));
  std::string damaged = pipeline::EncodeJpeg(rgb);
  write("truncated.jpg", damaged.substr(0, damaged.size() * 3 / 4));
  std::fill(damaged.begin() + static_cast<int64_t>(damaged.size()) / 2, damaged.end() - 2, 'x');
  write("corrupt.jpg", damaged);
  return 5;
}

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// images/s of DecodeJpeg over every file, `epochs` times, on `threads` threads.
double DecodeOnlyRate(const std::vector<std::string>& bytes, int threads, int epochs) {
  const auto t0 = Clock::now();
  std::vector<std::thread> pool;
  std::vector<std::string> errors(static_cast<size_t>(threads));  // a thread must not throw
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (int e = 0; e < epochs; ++e) {
          for (size_t i = static_cast<size_t>(t); i < bytes.size(); i += threads) {
            const Tensor img = pipeline::DecodeJpeg(
                reinterpret_cast<const uint8_t*>(bytes[i].data()), bytes[i].size(), 3);
            if (img.dim(2) != 3) errors[t] = "decoded a non-RGB image";
          }
        }
      } catch (const Error& err) {
        errors[t] = err.what();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (const std::string& e : errors) {
    if (!e.empty()) throw Error(ErrorCode::kDataLoss, "decode only: " + e);
  }
  return static_cast<double>(bytes.size()) * epochs / Seconds(t0);
}

constexpr int kShards = 4;

// The corpus as TFRecord shards of the files' bytes, as shardflow-convert --input.format=images
// writes them (image/encoded, label): work/shards/img-0000S-of-00004.tfrecord.
void WriteShards(const ImageArgs& a, const std::vector<fs::path>& files) {
  const fs::path dir = fs::path(a.work) / "shards";
  fs::create_directories(dir);
  io::ExampleBuilder builder;
  std::string serialized;
  for (int s = 0; s < kShards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "img-%05d-of-%05d.tfrecord", s, kShards);
    io::TFRecordWriter writer((dir / name).string());
    for (size_t i = static_cast<size_t>(s); i < files.size(); i += kShards) {
      const std::string cls = files[i].parent_path().filename().string();  // "classK"
      builder.Clear();
      builder.AddBytes("image/encoded", {ReadFile(files[i])});
      builder.AddInt64("label", {std::stoll(cls.substr(5))});
      serialized.clear();
      builder.SerializeTo(&serialized);
      writer.Write(serialized);
    }
    writer.Close();
  }
}

// The process's resident memory now, MiB (/proc/self/statm).
double ResidentMiB() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1 << 20);
}

// images/s of the input pipeline over `epochs` passes: from the TFRecord shards (or the image
// folder with `folder`), the decode fused into the crop or not. With `rss`, the resident memory
// after each pass.
double PipelineRate(const ImageArgs& a, int threads, bool fuse, bool folder, int epochs,
                    std::vector<double>* rss = nullptr) {
  // Every pipeline starts cold, as the peers do: no batch blocks recycled from the run before.
  pipeline::ReleasePooledBlocks();
  pipeline::InputSpec spec;
  if (folder) {
    spec.data.format = "images";
    spec.format.root = (fs::path(a.work) / "images").string();
    spec.format.channels = 3;
  } else {
    spec.data.format = "tfrecord";
    spec.data.files = {(fs::path(a.work) / "shards" / "img-*.tfrecord").string()};
    spec.features = {"image/encoded:image:uint8:*x*x3", "label:int64:int64:scalar"};
    spec.data.image_feature = "image/encoded";
  }
  spec.data.batch_size = 64;
  spec.data.shuffle_buffer = 256;
  spec.data.parallel_calls = threads;
  spec.data.epochs = epochs;
  spec.data.seed = 49;
  spec.data.fuse_decode_crop = fuse;
  const std::string s = std::to_string(a.size);
  spec.data.augmentations = {"random_resized_crop:" + s + "x" + s, "random_flip",
                             "normalize:123.675,116.28,103.53/58.395,57.12,57.375"};
  const auto t0 = Clock::now();
  pipeline::PipelineIterator it = pipeline::BuildInputPipeline(spec, 0, 1).MakeIterator();
  pipeline::Element batch;
  int64_t images = 0;
  while (it.Next(&batch)) {
    const Tensor& x = batch.Get(folder ? "image" : "image/encoded");
    if (x.rank() != 4 || x.dim(1) != a.size || x.dim(2) != a.size || x.dim(3) != 3) {
      throw Error(ErrorCode::kInternal, "a batch of shape " + ShapeToString(x.shape()));
    }
    images += x.dim(0);
    if (rss != nullptr && images >= static_cast<int64_t>(rss->size() + 1) * a.images) {
      rss->push_back(ResidentMiB());
    }
  }
  const double took = Seconds(t0);
  if (images != static_cast<int64_t>(a.images) * epochs) {
    throw Error(ErrorCode::kInternal, "the pipeline yielded " + std::to_string(images) +
                                          " images, not " + std::to_string(a.images * epochs));
  }
  return static_cast<double>(images) / took;
}

// The wild set through the training pipeline (the image folder, fused crop, flip, normalize):
// under on_error = skip the damaged two are dropped and counted and the rest decode; under fail
// the run stops with data loss. Prints one line; throws Error(kInternal) when it differs.
void CheckWildSet(const ImageArgs& a, int decodable) {
  pipeline::InputSpec spec;
  spec.data.format = "images";
  spec.format.root = (fs::path(a.work) / "wild").string();
  spec.format.channels = 3;
  spec.format.on_error = "skip";
  spec.data.batch_size = 4;
  spec.data.parallel_calls = 1;
  spec.data.augmentations = {"random_resized_crop:64x64", "random_flip",
                             "normalize:123.675,116.28,103.53/58.395,57.12,57.375"};
  const int64_t skipped_before = pipeline::DistinctSkippedRecords();
  int64_t images = 0;
  pipeline::PipelineIterator it = pipeline::BuildInputPipeline(spec, 0, 1).MakeIterator();
  for (pipeline::Element batch; it.Next(&batch);) images += batch.Get("image").dim(0);
  const int64_t skipped = pipeline::DistinctSkippedRecords() - skipped_before;
  spec.format.on_error = "fail";
  std::string stop;
  try {
    pipeline::PipelineIterator failing = pipeline::BuildInputPipeline(spec, 0, 1).MakeIterator();
    for (pipeline::Element batch; failing.Next(&batch);) {
    }
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kDataLoss) stop = e.context().file;
  }
  std::printf(
      "wild JPEGs (progressive, grey, CMYK, 4:4:4, EXIF-rotated; truncated, corrupt): "
      "%lld decoded, %lld skipped and counted under on_error = skip; on_error = fail "
      "stops at %s\n",
      static_cast<long long>(images), static_cast<long long>(skipped),
      stop.empty() ? "nothing" : stop.c_str());
  if (images != decodable || skipped != 2 || stop.empty()) {
    throw Error(ErrorCode::kInternal, "the wild JPEGs did not decode, skip and stop as they must");
  }
}

ImageArgs ParseImageArgs(const std::vector<std::string>& args) {
  ImageArgs a;
  for (FlagCursor f(args, "image"); f.Next();) {
    if (f.Is("--source")) {
      a.source = f.Value();
    } else if (f.Is("--work")) {
      a.work = f.Value();
    } else if (f.Is("--images")) {
      a.images = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--epochs")) {
      a.epochs = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--size")) {
      a.size = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--threads")) {
      a.threads.clear();
      std::stringstream in(f.Value());
      for (std::string t; std::getline(in, t, ',');)
        a.threads.push_back(ParsePositive("--threads", t));
    } else if (f.Is("--long-side")) {
      a.long_side = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--grain")) {
      const std::string text = f.Value();
      char* end = nullptr;
      a.grain = std::strtod(text.c_str(), &end);
      if (end == text.c_str() || *end != '\0' || !(a.grain >= 0 && a.grain <= 64)) {
        throw Error(ErrorCode::kInvalidArgument, "--grain wants 0..64 levels, got " + text);
      }
    } else if (f.Is("--memory-epochs")) {
      a.memory_epochs = ParsePositive(f.flag(), f.Value());
    } else if (f.Is("--only")) {
      a.only = f.Value();
      if (a.only != "decode" && a.only != "fused" && a.only != "unfused" && a.only != "folder") {
        throw Error(ErrorCode::kInvalidArgument,
                    "--only wants decode, fused, unfused or folder, got '" + a.only + "'");
      }
    } else if (f.Is("--corpus-only")) {
      a.corpus_only = true;
    } else if (f.Is("--json")) {
      a.json = true;
    } else {
      f.Unknown();
    }
  }
  return a;
}

int RunImage(const std::vector<std::string>& args) {
  const ImageArgs a = ParseImageArgs(args);
  std::vector<fs::path> files = CorpusFiles(a);
  if (files.empty()) {
    files = MakeCorpus(a);
    WriteShards(a, files);
  }
  const int decodable = MakeWildSet(a, files.front());
  if (a.corpus_only) return 0;
  CheckWildSet(a, decodable);
  std::vector<std::string> bytes;
  size_t total = 0;
  for (const fs::path& p : files) {
    bytes.push_back(ReadFile(p));
    total += bytes.back().size();
  }
  std::printf("image pipeline: %zu JPEGs, mean %.1f KB, output %dx%d, %d epochs\n", files.size(),
              static_cast<double>(total) / files.size() / 1024, a.size, a.size, a.epochs);
  std::printf("%8s %13s %13s %13s %13s %12s %12s\n", "threads", "decode img/s", "fused img/s",
              "unfused img/s", "folder img/s", "fused/thread", "fused/decode");
  const auto runs = [&](const char* phase) { return a.only.empty() || a.only == phase; };
  for (int t : a.threads) {
    const double decode = runs("decode") ? DecodeOnlyRate(bytes, t, a.epochs) : 0;
    const double fused = runs("fused") ? PipelineRate(a, t, true, false, a.epochs) : 0;
    const double unfused = runs("unfused") ? PipelineRate(a, t, false, false, a.epochs) : 0;
    const double folder = runs("folder") ? PipelineRate(a, t, true, true, a.epochs) : 0;
    std::printf("%8d %13.0f %13.0f %13.0f %13.0f %12.0f %12.2f\n", t, decode, fused, unfused,
                folder, fused / t, fused / decode);
    if (a.json) {
      std::printf("%s\n", nlohmann::json{{"bench", "image"},
                                         {"threads", t},
                                         {"images", files.size()},
                                         {"size", a.size},
                                         {"decode_per_s", decode},
                                         {"fused_per_s", fused},
                                         {"unfused_per_s", unfused},
                                         {"folder_fused_per_s", folder}}
                              .dump()
                              .c_str());
    }
  }
  if (a.memory_epochs > 0) {
    // Over many passes: the resident memory after each, which must not grow.
    std::vector<double> rss;
    const int t = *std::max_element(a.threads.begin(), a.threads.end());
    PipelineRate(a, t, true, false, a.memory_epochs, &rss);
    std::printf(
        "resident memory after each of %d epochs (fused, %d threads), MiB:", a.memory_epochs, t);
    for (double r : rss) std::printf(" %.0f", r);
    // Batches come and go (and the block pool fills in the first pass): growth is the peak
    // of the second half of the passes against the first half's.
    const auto half = rss.begin() + static_cast<int64_t>(rss.size() + 1) / 2;
    const double first = *std::max_element(rss.begin(), half);
    const double second = half == rss.end() ? first : *std::max_element(half, rss.end());
    std::printf("\nresident memory peak, passes 1-%d: %.0f MiB, passes %d-%d: %.0f MiB (%+.1f)\n",
                static_cast<int>(half - rss.begin()), first,
                static_cast<int>(half - rss.begin()) + 1, a.memory_epochs, second, second - first);
    // The pipeline's configured bounds on what it buffers: the fused map and batch's open
    // batches (2 + ceil(threads / 64)), the consumer's batch, the prefetch depth autotuned
    // within the 1 GiB RAM budget (pipeline/autotune.hpp), the shuffle buffer's 256 records.
    const double batch_mib = 64.0 * a.size * a.size * 3 * 4 / (1 << 20);
    size_t largest = 0;
    for (const std::string& b : bytes) largest = std::max(largest, b.size());
    const double open = 2 + (t + 63) / 64 + 1, shuffle = 256.0 * largest / (1 << 20);
    std::printf(
        "configured bound on buffered data: %.0f MiB = %.0f batches of %.1f MiB (map+batch and "
        "consumer) + prefetch within its 1024 MiB budget + shuffle 256 records <= %.1f MiB + "
        "the block pool's %lld MiB of free batches\n",
        open * batch_mib + 1024 + shuffle + static_cast<double>(pipeline::kPooledBytesKept >> 20),
        open, batch_mib, shuffle, static_cast<long long>(pipeline::kPooledBytesKept >> 20));
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak resident memory %.0f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024);
  return 0;
}

}  // namespace

SHARDFLOW_BENCH("image",
                "JPEG decode-only vs the random_resized_crop pipeline, fused and not (issue 49)",
                RunImage);

}  // namespace shardflow::bench
