// shardflow-inspect's per-format handlers. A handler knows one file format (TFRecord, HDF5),
// registered in Handlers(); the commands in inspect.cpp only talk to this interface.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "apps/inspect/json_text.hpp"
#include "core/error.hpp"

namespace shardflow::inspect {

// Per (feature, kind) totals for `stats`.
struct FeatureTotals {
  int64_t examples = 0;      // records holding the feature
  int64_t values = 0;        // number of values (bytes: number of byte strings)
  Int128 int_sum = 0;        // int64: exact sum
  double float_sum = 0;      // float: sum in double
  uint64_t byte_length = 0;  // bytes: total length
  uint64_t byte_sum = 0;     // bytes: sum of all byte values
};

// One dataset of an HDF5 file for `stats`.
struct DatasetTotals {
  std::string file;
  std::string name;
  std::string dtype;           // "uint8", "float32", ... or the unsupported type's name
  std::vector<int64_t> shape;  // [] for a scalar
  int64_t elements = 0;
  bool summed = false;  // false for types without a sum (strings, compounds, ...)
  bool is_integer = false;
  int64_t int_sum = 0;   // exact (wrapping) for integer datasets
  double float_sum = 0;  // float datasets, summed in double
};

struct StatsTotals {
  int64_t files = 0;
  int64_t records = 0;
  // HDF5 files: every dataset, per file, in the file's order.
  std::vector<DatasetTotals> datasets;
  // key: feature name, then kind name ("int64", "float", "bytes", "none")
  std::map<std::pair<std::string, std::string>, FeatureTotals> features;
};

struct VerifyReport {
  int64_t records = 0;
  std::string unit = "records";  // what `records` counts ("datasets" for HDF5)
  uint64_t bytes = 0;            // bytes of the (uncompressed) record stream checked
  // The first data loss, if any. Its context names the byte offset and record, or (HDF5) the
  // dataset as `key`.
  std::optional<Status> loss;
};

class FormatHandler {
 public:
  virtual ~FormatHandler() = default;
  virtual const char* name() const = 0;
  // Whether this handler reads `path` (by suffix or content).
  virtual bool Handles(const std::string& path) const = 0;
  // Checks every record; data loss is reported in the result, other failures throw Error.
  virtual VerifyReport Verify(const std::string& path) const = 0;
  // One JSON object per record per line. Throws Error (kDataLoss for damaged data).
  virtual void Cat(const std::string& path, std::ostream& out) const = 0;
  // Adds the file's records to totals. Throws Error.
  virtual void Stats(const std::string& path, StatsTotals* totals) const = 0;
};

// All handlers; the first that Handles() a path is used.
const std::vector<std::unique_ptr<FormatHandler>>& Handlers();
std::unique_ptr<FormatHandler> MakeTFRecordHandler();
std::unique_ptr<FormatHandler> MakeHdf5Handler();

}  // namespace shardflow::inspect
