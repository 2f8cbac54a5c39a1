#include "apps/convert/image_input.hpp"

#include <cstring>

#include "core/error.hpp"
#include "io/hdf5/reader.hpp"
#include "io/idx.hpp"

namespace shardflow::convert {
namespace {

// Integer labels of any supported dtype as int64.
std::vector<int64_t> LabelsAsInt64(const Tensor& t, const std::string& file,
                                   const std::string& name) {
  std::vector<int64_t> out(static_cast<size_t>(t.num_elements()));
  switch (t.dtype()) {
    case DType::kUInt8:
      for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<uint8_t>()[i];
      break;
    case DType::kInt32:
      for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<int32_t>()[i];
      break;
    case DType::kInt64:
      std::memcpy(out.data(), t.raw_data(), out.size() * sizeof(int64_t));
      break;
    default:
      throw Error(ErrorCode::kInvalidArgument,
                  std::string("labels must be integers, found ") + DTypeName(t.dtype()),
                  {.file = file, .key = name});
  }
  return out;
}

// [H, W] -> [H, W, 1]; [H, W, C] kept. Other ranks are refused.
Shape RecordShape(const Shape& row_shape, const std::string& file, const std::string& name) {
  if (row_shape.size() == 2) return {row_shape[0], row_shape[1], 1};
  if (row_shape.size() == 3) return row_shape;
  throw Error(
      ErrorCode::kInvalidArgument,
      "images must have shape [N, H, W] or [N, H, W, C], found rows of " + ShapeToString(row_shape),
      {.file = file, .key = name});
}

class IdxImages final : public ImageInput {
 public:
  IdxImages(const ConvertOptions& o) {
    std::string images = o.images, labels = o.labels;
    if (images.empty()) {
      const std::string prefix = o.dir + "/" + (o.split == "train" ? "train" : "t10k");
      images = prefix + "-images-idx3-ubyte.gz";
      labels = prefix + "-labels-idx1-ubyte.gz";
    }
    data_ = io::ReadIdxImagesLabels(images, labels);
    total_ = data_.images.dim(0);
    stored_shape_ = Shape(data_.images.shape().begin() + 1, data_.images.shape().end());
    record_shape_ = RecordShape(stored_shape_, images, "images");
    dtype_ = DType::kUInt8;
    labels_ = LabelsAsInt64(data_.labels, labels, "labels");
  }

  ImageRecords Read(int64_t begin, int64_t end) override {
    ImageRecords r;
    r.first = begin;
    Shape shape = record_shape_;
    shape.insert(shape.begin(), end - begin);
    r.images = data_.images.Slice(begin, end).Clone().Reshaped(shape);
    r.labels.assign(labels_.begin() + begin, labels_.begin() + end);
    return r;
  }

 private:
  io::IdxImagesLabels data_;
  std::vector<int64_t> labels_;
};

class Hdf5Images final : public ImageInput {
 public:
  Hdf5Images(const ConvertOptions& o, comm::Communicator& comm)
      : path_(o.path), reader_(o.path, comm.raw()), images_(o.datasets.at(0)) {
    if (o.datasets.size() > 1) labels_ = o.datasets[1];
    const io::Hdf5DatasetInfo info = reader_.file().Describe(images_);
    if (info.shape.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "images dataset is a scalar",
                  {.file = path_, .key = images_});
    }
    if (!info.dtype || (*info.dtype != DType::kUInt8 && *info.dtype != DType::kFloat32 &&
                        *info.dtype != DType::kFloat64)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "images must be uint8, float32 or float64, found " + info.type_name,
                  {.file = path_, .key = images_});
    }
    stored_shape_ = Shape(info.shape.begin() + 1, info.shape.end());
    record_shape_ = RecordShape(stored_shape_, path_, images_);
    dtype_ = *info.dtype == DType::kUInt8 ? DType::kUInt8 : DType::kFloat32;
    total_ = labels_.empty() ? info.shape[0] : reader_.GroupRows({images_, labels_});
  }

  ImageRecords Read(int64_t begin, int64_t end) override {
    ImageRecords r;
    r.first = begin;
    Shape shape = record_shape_;
    shape.insert(shape.begin(), end - begin);
    Tensor raw = reader_.ReadRows(images_, begin, end);
    if (raw.dtype() == DType::kFloat64) {
      Tensor narrowed(DType::kFloat32, shape);
      for (int64_t i = 0; i < raw.num_elements(); ++i) {
        narrowed.data<float>()[i] = static_cast<float>(raw.data<double>()[i]);
      }
      r.images = std::move(narrowed);
    } else {
      r.images = raw.Reshaped(shape);
    }
    if (labels_.empty()) {
      r.labels.assign(static_cast<size_t>(end - begin), -1);
    } else {
      r.labels = LabelsAsInt64(reader_.ReadRows(labels_, begin, end), path_, labels_);
    }
    return r;
  }

 private:
  std::string path_;
  io::Hdf5Reader reader_;
  std::string images_;
  std::string labels_;
};

}  // namespace

std::unique_ptr<ImageInput> ImageInput::Open(const ConvertOptions& options,
                                             comm::Communicator& comm) {
  if (options.format == "idx") return std::make_unique<IdxImages>(options);
  return std::make_unique<Hdf5Images>(options, comm);
}

}  // namespace shardflow::convert
