// IDX image+label pairs as a row source.
#include <map>

#include "core/thread_annotations.hpp"
#include "io/idx.hpp"
#include "io/pipeline/sources/open_source.hpp"
#include "io/pipeline/sources/row_source.hpp"

namespace shardflow::pipeline {
namespace {

struct IdxState {
  std::vector<std::string> images, labels;
  Mutex mu;
  // Whole files, loaded on first use.
  std::map<size_t, std::shared_ptr<const RowBlock>> loaded GUARDED_BY(mu);
};

std::string LabelsFor(const std::string& images) {
  const size_t at = images.rfind("images-idx3");
  if (at == std::string::npos) return "";
  std::string labels = images;
  labels.replace(at, 11, "labels-idx1");
  return labels;
}

}  // namespace

std::shared_ptr<const RecordSource> OpenIdxSource(const std::vector<std::string>& files,
                                                  const SourceOptions& options) {
  auto state = std::make_shared<IdxState>();
  std::vector<FileInfo> infos;
  std::vector<uint64_t> row_bytes;
  for (const auto& path : files) {
    if (path.find("labels-idx1") != std::string::npos) continue;  // read with its images
    const std::string labels = LabelsFor(path);
    if (labels.empty()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "an idx input must be an images file named *images-idx3* (its labels file "
                  "*labels-idx1* is found beside it)",
                  {.file = path, .key = "files"});
    }
    FileInfo info = StatFile(path);
    StatFile(labels);  // kNotFound naming the labels file
    const io::IdxHeader h = io::ReadIdxHeader(path);
    const io::IdxHeader hl = io::ReadIdxHeader(labels);
    if (h.shape.empty() || hl.shape.empty() || h.shape[0] != hl.shape[0]) {
      throw Error(ErrorCode::kInvalidArgument,
                  "images and labels files hold different counts (" +
                      std::to_string(h.shape.empty() ? 0 : h.shape[0]) + " vs " +
                      std::to_string(hl.shape.empty() ? 0 : hl.shape[0]) + ")",
                  {.file = path, .hint = "labels: " + labels});
    }
    info.num_records = h.shape[0];
    infos.push_back(std::move(info));
    row_bytes.push_back(static_cast<uint64_t>(h.data_bytes() / std::max<int64_t>(1, h.shape[0])) +
                        8);
    state->images.push_back(path);
    state->labels.push_back(labels);
  }
  RowSource::Loader loader = [state](size_t file, int64_t begin, int64_t end) {
    std::shared_ptr<const RowBlock> all;
    {
      MutexLock lock(state->mu);
      auto& slot = state->loaded[file];
      if (!slot) {
        io::IdxImagesLabels data =
            io::ReadIdxImagesLabels(state->images.at(file), state->labels.at(file));
        Tensor labels(DType::kInt64, {data.labels.dim(0)});
        const uint8_t* in = data.labels.data<uint8_t>();
        int64_t* out = labels.data<int64_t>();
        for (int64_t i = 0; i < data.labels.dim(0); ++i) out[i] = in[i];
        slot =
            std::make_shared<const RowBlock>(RowBlock{{"image", data.images}, {"label", labels}});
      }
      all = slot;
    }
    RowBlock block;
    for (const auto& [name, t] : *all) block.emplace_back(name, t.Slice(begin, end));
    return block;
  };
  return std::make_shared<RowSource>(std::move(infos), std::move(row_bytes), std::move(loader),
                                     "idx(image,label)", options.block_rows);
}

}  // namespace shardflow::pipeline
