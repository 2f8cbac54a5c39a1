#include "io/pipeline/sources/image_folder_source.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "io/file.hpp"
#include "io/pipeline/ops/image_codec.hpp"
#include "io/pipeline/ops/jpeg_window.hpp"

namespace shardflow::pipeline {
namespace {

namespace fs = std::filesystem;

Tensor BytesTensor(const std::string& bytes) {
  Tensor t(DType::kUInt8, {static_cast<int64_t>(bytes.size())});
  if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  return t;
}

// The "image" feature: decoded, or with keep_jpeg a JPEG's bytes after a header check.
Tensor ImageFeature(const std::string& bytes, const ImageFolderOptions& o) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if (o.keep_jpeg && bytes.size() >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    ReadJpegHeader(data, bytes.size());
    return BytesTensor(bytes);
  }
  return DecodeImageBytes(data, bytes.size(), o.channels);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class ImageReader : public RecordReader {
 public:
  ImageReader(const FileInfo& info, int64_t label, const ImageFolderOptions& o,
              std::shared_ptr<SourceCounters> counters)
      : info_(info), label_(label), options_(o), counters_(std::move(counters)) {}

  bool Next(Element* out) override {
    if (done_) return false;
    done_ = true;
    auto file = io::FileSystem::Default()->NewRandomAccessFile(info_.name);
    std::string bytes(info_.size_bytes, '\0');
    size_t got = 0;
    ThrowIfError(file->Read(0, bytes.size(), bytes.data(), &got));
    bytes.resize(got);
    out->features.clear();
    if (options_.decode) {
      Tensor image;
      try {
        image = ImageFeature(bytes, options_);
      } catch (const Error& e) {
        Error corrupt(
            ErrorCode::kDataLoss,
            "corrupt image (" + std::to_string(bytes.size()) + " bytes): " + e.status().message(),
            {.file = info_.name, .record = 0, .key = "image"});
        if (options_.on_error == OnError::kFail) throw corrupt;
        CountSkip(*counters_, corrupt.what(), RecordKey(corrupt.context()));
        return false;
      }
      out->features.emplace_back("image", std::move(image));
      if (options_.keep_encoded) out->features.emplace_back("encoded", BytesTensor(bytes));
    } else {
      out->features.emplace_back("encoded", BytesTensor(bytes));
    }
    Tensor label(DType::kInt64, Shape{});
    *label.data<int64_t>() = label_;
    out->features.emplace_back("label", std::move(label));
    out->where.record = 0;
    out->where.offset = 0;
    return true;
  }
  ReaderPosition Position() const override { return {0, done_ ? 1 : 0}; }
  void Seek(const ReaderPosition& p) override { done_ = p.record > 0; }

 private:
  FileInfo info_;
  int64_t label_;
  const ImageFolderOptions& options_;
  std::shared_ptr<SourceCounters> counters_;
  bool done_ = false;
};

}  // namespace

ImageFolderSource::ImageFolderSource(const ImageFolderOptions& options) : options_(options) {
  if (options.root.empty() == options.list_file.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "give exactly one of root and list_file",
                {.key = options.root.empty() ? "list_file" : "root"});
  }
  if (!options.root.empty()) {
    std::error_code ec;
    if (!fs::is_directory(options.root, ec)) {
      throw Error(ErrorCode::kNotFound, "image root is not a folder", {.file = options.root});
    }
    for (const auto& entry : fs::directory_iterator(options.root)) {
      if (entry.is_directory()) class_names_.push_back(entry.path().filename().string());
    }
    std::sort(class_names_.begin(), class_names_.end());
    if (class_names_.empty()) {
      throw Error(ErrorCode::kNotFound, "image root has no class folders",
                  {.file = options.root, .hint = "expected root/CLASS/*.jpg|png"});
    }
    std::vector<std::string> exts;
    for (const auto& e : options.extensions) exts.push_back(Lower(e));
    for (size_t c = 0; c < class_names_.size(); ++c) {
      std::vector<std::string> names;
      for (const auto& entry : fs::directory_iterator(fs::path(options.root) / class_names_[c])) {
        if (!entry.is_regular_file()) continue;
        const std::string ext = Lower(entry.path().extension().string());
        if (std::find(exts.begin(), exts.end(), ext) != exts.end()) {
          names.push_back(entry.path().string());
        }
      }
      std::sort(names.begin(), names.end());
      for (auto& n : names) {
        infos_.push_back(StatFile(n));
        infos_.back().num_records = 1;
        labels_.push_back(static_cast<int64_t>(c));
      }
    }
  } else {
    std::ifstream in(options.list_file);
    if (!in)
      throw Error(ErrorCode::kNotFound, "cannot open the list file", {.file = options.list_file});
    const fs::path base = fs::path(options.list_file).parent_path();
    std::string line;
    int64_t line_no = 0;
    int64_t max_label = -1;
    while (std::getline(in, line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || line[0] == '#') continue;
      const size_t comma = line.rfind(',');
      auto bad = [&](const std::string& why) {
        return Error(ErrorCode::kInvalidArgument,
                     "list line " + std::to_string(line_no) + ": " + why + " (expected path,label)",
                     {.file = options.list_file, .record = line_no - 1});
      };
      if (comma == std::string::npos || comma == 0) throw bad("no path,label");
      int64_t label = -1;
      try {
        size_t used = 0;
        const std::string text = line.substr(comma + 1);
        label = std::stoll(text, &used);
        if (used != text.size() || label < 0) throw bad("label must be an integer >= 0");
      } catch (const std::logic_error&) {
        throw bad("label must be an integer >= 0");
      }
      fs::path p = line.substr(0, comma);
      if (p.is_relative()) p = base / p;
      FileInfo info;
      try {
        info = StatFile(p.string());
      } catch (const Error& e) {
        throw Error(
            e.code(), "list line " + std::to_string(line_no) + ": " + e.status().message(),
            {.file = p.string(), .record = line_no - 1, .hint = "listed in " + options.list_file});
      }
      info.num_records = 1;
      infos_.push_back(std::move(info));
      labels_.push_back(label);
      max_label = std::max(max_label, label);
    }
    class_names_.assign(static_cast<size_t>(max_label + 1), "");
  }
}

std::unique_ptr<RecordReader> ImageFolderSource::Open(size_t file_index, const ByteRange&) const {
  if (file_index >= infos_.size()) {
    throw Error(ErrorCode::kInternal, "file index out of range: " + std::to_string(file_index));
  }
  return std::make_unique<ImageReader>(infos_[file_index], labels_[file_index], options_,
                                       counters_);
}

std::string ImageFolderSource::FormatDescription() const {
  return std::string("images(decode=") +
         (options_.decode ? (options_.keep_jpeg ? "true,keep_jpeg" : "true") : "false") +
         ",channels=" + std::to_string(options_.channels) +
         ",on_error=" + OnErrorName(options_.on_error) + ")";
}

void ImageFolderSource::WriteLabelMap(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    for (size_t c = 0; c < class_names_.size(); ++c) out << c << ',' << class_names_[c] << '\n';
    out.close();
    if (!out) throw Error(ErrorCode::kIo, "cannot write the label map", {.file = tmp});
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw Error(ErrorCode::kIo, std::string("cannot rename the label map: ") + std::strerror(errno),
                {.file = path});
  }
}

std::shared_ptr<const RecordSource> OpenImageFolderSource(const ImageFolderOptions& options) {
  return std::make_shared<ImageFolderSource>(options);
}

}  // namespace shardflow::pipeline
