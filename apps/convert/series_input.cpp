#include "apps/convert/series_input.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "io/csv.hpp"
#include "io/hdf5/reader.hpp"

namespace shardflow::convert {
namespace {

namespace fs = std::filesystem;

// The header of a CSV file (its first record), parsed by io/csv so quoting and a BOM behave.
std::vector<std::string> ReadHeader(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kNotFound, "cannot open CSV file", {.file = path});
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return io::ParseCsv(line + "\n", path, {}).header;
}

class CsvSeries final : public SeriesInput {
 public:
  explicit CsvSeries(const ConvertOptions& o) : time_column_(o.time_column) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(o.path, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".csv") {
        names_.push_back(entry.path().string());
      }
    }
    if (ec) throw Error(ErrorCode::kIo, "cannot list folder: " + ec.message(), {.file = o.path});
    std::sort(names_.begin(), names_.end());
    if (names_.empty()) {
      throw Error(ErrorCode::kNotFound, "no *.csv files in the input folder", {.file = o.path});
    }
    header_ = ReadHeader(names_[0]);
    if (std::find(header_.begin(), header_.end(), time_column_) == header_.end()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "time column '" + time_column_ + "' not in the header",
                  {.file = names_[0],
                   .key = "input.time_column",
                   .hint = "a folder of per-asset time series is expected; for a table of "
                           "feature and label columns use --input.format=table"});
    }
    io::CsvOptions csv;
    csv.columns.push_back({time_column_, io::CsvType::kFloat64, std::nullopt});
    for (const std::string& name : header_) {
      if (name == time_column_) continue;
      channel_names_.push_back(name);
      csv.columns.push_back({name, io::CsvType::kFloat64, std::nullopt});
    }
    if (channel_names_.empty()) {
      throw Error(ErrorCode::kInvalidArgument, "no channel columns besides the time column",
                  {.file = names_[0]});
    }
    csv_ = std::move(csv);
  }

  std::vector<Tensor> Read(int64_t begin, int64_t end) override {
    std::vector<Tensor> out;
    for (int64_t a = begin; a < end; ++a) out.push_back(ReadAsset(names_[a]));
    return out;
  }

 private:
  Tensor ReadAsset(const std::string& path) const {
    const io::CsvTable table = io::ReadCsv(path, csv_);
    if (table.header != header_) {
      throw Error(ErrorCode::kInvalidArgument,
                  "header differs from the first file's (" + names_[0] + ")", {.file = path});
    }
    const int64_t rows = table.rows;
    const int64_t channels = this->channels();
    const double* time = table.columns[0].values.data<double>();
    Tensor values(DType::kFloat64, {rows, channels});
    double* v = values.data<double>();
    // Rows are counted from 1 after the header ("data row 1" is the file's second record).
    for (int64_t r = 0; r < rows; ++r) {
      if (!std::isfinite(time[r]) || (r > 0 && !(time[r] > time[r - 1]))) {
        throw Error(ErrorCode::kInvalidArgument,
                    "time column '" + time_column_ + "' must be finite and strictly increasing (" +
                        std::to_string(time[r]) + " at data row " + std::to_string(r + 1) + ")",
                    {.file = path, .record = r + 1, .key = time_column_});
      }
      for (int64_t c = 0; c < channels; ++c) {
        const double x = table.columns[c + 1].values.data<double>()[r];
        if (!std::isfinite(x)) {
          throw Error(ErrorCode::kInvalidArgument,
                      "non-finite value at data row " + std::to_string(r + 1) + ", column '" +
                          channel_names_[c] + "'",
                      {.file = path, .record = r + 1, .key = channel_names_[c]});
        }
        v[r * channels + c] = x;
      }
    }
    return values;
  }

  std::string time_column_;
  std::vector<std::string> header_;
  io::CsvOptions csv_;
};

class Hdf5Series final : public SeriesInput {
 public:
  Hdf5Series(const ConvertOptions& o, comm::Communicator& comm)
      : path_(o.path), reader_(o.path, comm.raw()), dataset_(o.datasets.at(0)) {
    const io::Hdf5DatasetInfo info = reader_.file().Describe(dataset_);
    if ((info.shape.size() != 2 && info.shape.size() != 3) || !info.dtype ||
        (*info.dtype != DType::kFloat32 && *info.dtype != DType::kFloat64)) {
      throw Error(ErrorCode::kInvalidArgument,
                  "a series dataset must be float32/float64 [assets, steps(, channels)], found " +
                      info.type_name + " " + ShapeToString(info.shape),
                  {.file = path_, .key = dataset_});
    }
    steps_ = info.shape[1];
    const int64_t channels = info.shape.size() == 3 ? info.shape[2] : 1;
    for (int64_t c = 0; c < channels; ++c) channel_names_.push_back("ch" + std::to_string(c));
    for (int64_t a = 0; a < info.shape[0]; ++a) {
      names_.push_back(path_ + ":" + dataset_ + "[" + std::to_string(a) + "]");
    }
  }

  std::vector<Tensor> Read(int64_t begin, int64_t end) override {
    const Tensor raw = reader_.ReadRows(dataset_, begin, end);
    const int64_t per_asset = steps_ * channels();
    std::vector<Tensor> out;
    for (int64_t a = 0; a < end - begin; ++a) {
      Tensor values(DType::kFloat64, {steps_, channels()});
      double* v = values.data<double>();
      for (int64_t i = 0; i < per_asset; ++i) {
        const int64_t at = a * per_asset + i;
        v[i] = raw.dtype() == DType::kFloat32 ? raw.data<float>()[at] : raw.data<double>()[at];
        if (!std::isfinite(v[i])) {
          throw Error(ErrorCode::kInvalidArgument,
                      "non-finite value at step " + std::to_string(i / channels()) + ", channel " +
                          std::to_string(i % channels()),
                      {.file = path_, .record = begin + a, .key = dataset_});
        }
      }
      out.push_back(std::move(values));
    }
    return out;
  }

 private:
  std::string path_;
  io::Hdf5Reader reader_;
  std::string dataset_;
  int64_t steps_ = 0;
};

}  // namespace

std::unique_ptr<SeriesInput> SeriesInput::Open(const ConvertOptions& options,
                                               comm::Communicator& comm) {
  if (options.format == "csv" || options.format == "series")
    return std::make_unique<CsvSeries>(options);
  return std::make_unique<Hdf5Series>(options, comm);
}

}  // namespace shardflow::convert
