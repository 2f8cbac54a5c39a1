// ImageFolderSource: labelled images from a folder tree `root/CLASS/*.jpg|png` (labels are the
// indices of the sorted class folder names, as torchvision's ImageFolder and Keras'
// image_dataset_from_directory do) or from a list file of `path,label` lines.
//
// Each image file is one record: features "image" (uint8 [h, w, c], decoded by
// ops/image_codec's DecodeImageBytes; or "encoded" uint8[n] bytes when decode = false) and
// "label" (int64 scalar); with keep_jpeg a JPEG's "image" is its bytes; with keep_encoded also
// "encoded" (the file's bytes); where.record = 0. Files are
// listed class by class, names sorted (byte order), so the order is the same on every rank. Shard
// with the file or record policy (one record per file: no byte ranges). Read and decode in parallel
// through the pipeline's interleave: Dataset::FromRecordSource(source, plan, {.cycle_length = 8,
// .num_parallel_reads = 8}) runs Open()+Next() (read + decode) of 8 files on 8 threads.
// Errors: a missing root or list file, an empty class-less root, or a bad list line is an Error
// at construction naming the path (and list line). A file that cannot be read (kIo/kNotFound)
// always fails. A corrupt or truncated image is Error(kDataLoss) naming the file; with
// on_error = kSkip it yields no record and is counted in counters().
// Thread-safety: Open() may be called concurrently.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/pipeline/record_source.hpp"
#include "io/pipeline/sources/source_counters.hpp"

namespace shardflow::pipeline {

struct ImageFolderOptions {
  // Exactly one of root and list_file. root: class folders directly below it. list_file: lines
  // "path,label" (label an integer >= 0; relative paths are relative to the list file's
  // folder; blank lines and lines starting with '#' are ignored).
  std::string root;
  std::string list_file;
  // File name suffixes taken from class folders (case-insensitive). Default jpg, jpeg, png.
  std::vector<std::string> extensions = {".jpg", ".jpeg", ".png"};
  bool decode = true;  // false: feature "encoded" holds the file's bytes. Default true.
  // With decode: JPEG files are not decoded but their header is read (a damaged one is a corrupt
  // image as above) and "image" holds the file's bytes, uint8 [n], for a fused decode-and-crop
  // op (ops/resized_crop.hpp) to decode only its window; PNGs are decoded. Default false.
  bool keep_jpeg = false;
  // With decode: the file's bytes also as feature "encoded" (uint8 [n]), e.g. for a converter
  // that checks every image by decoding it and keeps the original bytes. Default false.
  bool keep_encoded = false;
  int channels = 0;                   // 0: as stored, 1: grey, 3: RGB (see DecodeImageBytes)
  OnError on_error = OnError::kFail;  // corrupt image: fail (default) or skip and count
};

class ImageFolderSource : public RecordSource {
 public:
  explicit ImageFolderSource(const ImageFolderOptions& options);
  const std::vector<FileInfo>& Files() const override { return infos_; }
  std::unique_ptr<RecordReader> Open(size_t file_index, const ByteRange& range) const override;
  std::string FormatDescription() const override;

  // Label of file i; class names by label (from folder names; "" for list-file labels).
  int64_t Label(size_t file_index) const { return labels_.at(file_index); }
  const std::vector<std::string>& class_names() const { return class_names_; }
  // Writes "label,class_name" lines (one per class, by label) to `path` (via a temporary file
  // and rename, so readers never see half a file). Call it on one rank. Throws Error(kIo).
  void WriteLabelMap(const std::string& path) const;
  const SourceCounters& counters() const { return *counters_; }

 private:
  ImageFolderOptions options_;
  std::vector<FileInfo> infos_;
  std::vector<int64_t> labels_;
  std::vector<std::string> class_names_;
  std::shared_ptr<SourceCounters> counters_ = std::make_shared<SourceCounters>();
};

// The registration function the format registry calls ("images").
std::shared_ptr<const RecordSource> OpenImageFolderSource(const ImageFolderOptions& options);

}  // namespace shardflow::pipeline
