// shardflow-inspect for HDF5 files: verify reads every dataset, stats sums every dataset.
//
// A file is HDF5 when it carries HDF5's signature (at byte 0, 512, 1024, ... as the format
// allows for a user block) or is named .h5/.hdf5 (so a damaged file is reported as HDF5).
// The process runs without MPI: files are opened as one rank with HDF5's serial driver.
//
// Exit-code mapping (as for TFRecord): a missing file is unreadable (2); a file HDF5 cannot
// open although it exists, or a dataset whose data cannot be read (a truncated file, a corrupt
// compressed chunk), is data loss (3), reported with the dataset.
#include <hdf5.h>
#include <mpi.h>

#include <cstring>
#include <fstream>
#include <ostream>
#include <vector>

#include <algorithm>

#include "apps/inspect/format_handler.hpp"
#include "core/check_hdf5.hpp"
#include "io/hdf5/reader.hpp"

namespace shardflow::inspect {
namespace {

constexpr char kSignature[8] = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};

bool HasSignature(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  char buf[8];
  for (uint64_t offset = 0; offset < (uint64_t{1} << 40); offset = offset ? offset * 2 : 512) {
    in.seekg(static_cast<std::streamoff>(offset));
    if (!in.read(buf, sizeof(buf))) return false;
    if (std::memcmp(buf, kSignature, sizeof(buf)) == 0) return true;
  }
  return false;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Reads a dataset whose type has no Tensor dtype (strings, compounds, other integer widths)
// whole, in HDF5's native form of its type; returns the bytes read. Throws Error.
uint64_t ReadRaw(const io::Hdf5File& file, const std::string& name) {
  const io::H5Id dataset = file.OpenDataset(name);
  const io::H5Id file_type(
      SF_CHECK_H5(H5Dget_type(dataset.get()), .file = file.path(), .key = name));
  const io::H5Id mem_type(SF_CHECK_H5(H5Tget_native_type(file_type.get(), H5T_DIR_ASCEND),
                                      .file = file.path(), .key = name));
  const io::H5Id space(SF_CHECK_H5(H5Dget_space(dataset.get()), .file = file.path(), .key = name));
  const hssize_t points =
      SF_CHECK_H5(H5Sget_simple_extent_npoints(space.get()), .file = file.path(), .key = name);
  const size_t size = H5Tget_size(mem_type.get());
  std::vector<char> buffer(static_cast<size_t>(points) * size);
  SF_CHECK_H5(H5Dread(dataset.get(), mem_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()),
              .file = file.path(), .key = name);
  if (H5Tdetect_class(mem_type.get(), H5T_VLEN) > 0 || H5Tis_variable_str(mem_type.get()) > 0) {
    H5Dvlen_reclaim(mem_type.get(), space.get(), H5P_DEFAULT, buffer.data());
  }
  return buffer.size();
}

class Hdf5Handler final : public FormatHandler {
 public:
  const char* name() const override { return "hdf5"; }

  bool Handles(const std::string& path) const override {
    return EndsWith(path, ".h5") || EndsWith(path, ".hdf5") || HasSignature(path);
  }

  VerifyReport Verify(const std::string& path) const override {
    VerifyReport report;
    report.unit = "datasets";
    std::optional<io::Hdf5Reader> reader;
    try {
      reader.emplace(path, io::SelfCommunicator());
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kNotFound) throw;
      // A truncated or foreign file already says so in a user's terms (core/check_hdf5.hpp).
      report.loss =
          e.code() == ErrorCode::kDataLoss
              ? e.status()
              : Status(ErrorCode::kDataLoss, std::string("HDF5 cannot open the file: ") + e.what(),
                       {.file = path});
      return report;
    }
    std::vector<io::Hdf5DatasetInfo> datasets;
    try {
      datasets = reader->file().ListDatasets();
    } catch (const Error& e) {
      // A damaged object header (a flipped byte the metadata checksum catches): data loss.
      report.loss =
          Status(ErrorCode::kDataLoss, std::string("HDF5 cannot list the objects: ") + e.what(),
                 {.file = path});
      return report;
    }
    for (const io::Hdf5DatasetInfo& info : datasets) {
      try {
        if (info.dtype) {
          reader->Sum(info.name);  // reads every element, block by block
          report.bytes += static_cast<uint64_t>(NumElements(info.shape)) * DTypeSize(*info.dtype);
        } else {
          report.bytes += ReadRaw(reader->file(), info.name);
        }
      } catch (const Error& e) {
        report.loss = Status(ErrorCode::kDataLoss, std::string("cannot read: ") + e.what(),
                             {.file = path, .key = info.name});
        return report;
      }
      ++report.records;
    }
    return report;
  }

  void Cat(const std::string& path, std::ostream&) const override {
    throw Error(ErrorCode::kInvalidArgument,
                "cat is not supported for HDF5 files (use stats, or h5dump)", {.file = path});
  }

  // Damage (a file HDF5 cannot open, a dataset it cannot read) is rethrown as kDataLoss.
  void Stats(const std::string& path, StatsTotals* totals) const override {
    try {
      StatsOf(path, totals);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kNotFound || e.code() == ErrorCode::kDataLoss) throw;
      throw Error(ErrorCode::kDataLoss, std::string("unreadable HDF5 data: ") + e.what(),
                  {.file = path});
    }
  }

 private:
  static void StatsOf(const std::string& path, StatsTotals* totals) {
    io::Hdf5Reader reader(path, io::SelfCommunicator());
    // A file's records are the rows along the first dimension (shardflow reads record i as
    // row i of every dataset): the most rows any dataset has; scalars hold none.
    int64_t rows = 0;
    for (const io::Hdf5DatasetInfo& info : reader.file().ListDatasets()) {
      if (!info.shape.empty()) rows = std::max<int64_t>(rows, info.shape[0]);
    }
    totals->records += rows;
    for (const io::Hdf5DatasetInfo& info : reader.file().ListDatasets()) {
      DatasetTotals d;
      d.file = path;
      d.name = info.name;
      d.dtype = info.type_name;
      d.shape = info.shape;
      d.elements = NumElements(info.shape);
      if (info.dtype) {
        const io::Hdf5Sum sum = reader.Sum(info.name);
        d.summed = true;
        d.is_integer = sum.is_integer();
        d.int_sum = sum.int_sum;
        d.float_sum = sum.float_sum;
      }
      totals->datasets.push_back(std::move(d));
    }
    ++totals->files;
  }
};

}  // namespace

std::unique_ptr<FormatHandler> MakeHdf5Handler() { return std::make_unique<Hdf5Handler>(); }

}  // namespace shardflow::inspect
