// Hdf5File: one HDF5 file opened by every rank of a communicator, through MPI-IO.
//
// Every rank of `comm` opens the same file together (the open is collective). With more than one
// rank the file is reached through the MPI-IO driver (H5Pset_fapl_mpio) and dataset transfers
// are collective (H5Pset_dxpl_mpio(H5FD_MPIO_COLLECTIVE)) unless Hdf5Options::collective is
// false. With one rank, Driver::kAuto uses HDF5's serial POSIX driver, which is faster and needs
// no MPI; Driver::kMpio forces MPI-IO even then (the tests use it to cover that path).
//
// A process that has not initialised MPI can still use this class as a single rank with the
// serial driver (unit tests, converters): pass SelfCommunicator() (or MPI's world communicator).
//
// This file pair is the one place in io/ that calls MPI (the dependency rule keeps MPI in comm/,
// core/mpi_env and here): the communicator type, and the few collectives that io code needs
// around a shared file (all-reduces, a broadcast, an all-gather, agreeing on failure) are
// declared below so that readers, writers and checkpoints name no MPI symbol themselves.
//
// Dataset types map onto Tensor dtypes: unsigned 8-bit integer -> uint8, signed 32/64-bit
// integers -> int32/int64, IEEE 32/64-bit floats -> float32/float64 (either byte order; HDF5
// converts). Any other type is reported by name ("int16", "uint64", "string", ...) and refused
// by the readers.
//
// Thread-safety: none. Debian's parallel HDF5 is not built thread-safe: use an Hdf5File (and
// HDF5 in general) from one thread at a time. Errors are thrown as shardflow::Error naming the
// file and dataset; failures inside HDF5 carry HDF5's own error stack (SF_CHECK_H5).
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace shardflow::io {

// The communicator io's HDF5 classes take (MPI's communicator handle).
using Communicator = MPI_Comm;

// The calling process alone; usable with or without MPI initialised.
Communicator SelfCommunicator();

// ---- Collectives over `comm` for io code around a shared file. Every rank of `comm` calls each
// one in the same order. Without MPI initialised (or with one rank) they act on the caller
// alone: rank 0 of 1, reductions and broadcasts return their input. Failures of MPI itself
// throw Error(kCommunication).
int CommRank(Communicator comm);
int CommSize(Communicator comm);
// Element-wise sums and maxima of `count` values, in place, on every rank.
void AllreduceSum(Communicator comm, int64_t* values, int count);
void AllreduceSum(Communicator comm, uint64_t* values, int count);
void AllreduceSum(Communicator comm, double* values, int count);
void AllreduceMax(Communicator comm, int64_t* values, int count);
// `root`'s bytes on every rank (the others' `bytes` are replaced).
void Broadcast(Communicator comm, std::string* bytes, int root = 0);
// Every rank's `mine` (lengths may differ), indexed by rank, on every rank.
std::vector<std::vector<int64_t>> AllgatherInt64(Communicator comm,
                                                 const std::vector<int64_t>& mine);
// Agrees on the outcome of a step that each rank did (or checked) on its own, so that a failure
// on one rank is an error on every rank instead of a hang in the next collective. Returns when
// every rank's `local` is ok. Otherwise the lowest failing rank rethrows its own `local` and
// every other rank throws an Error of the same code whose message names that rank and repeats
// its error.
void AgreeOnStatus(Communicator comm, const Status& local);

struct Hdf5Options {
  enum class Driver { kAuto, kMpio, kSerial };
  // kAuto: MPI-IO when the communicator has more than one rank, the serial driver otherwise.
  // kSerial with more than one rank is refused (ranks would write over each other).
  Driver driver = Driver::kAuto;
  // Collective transfers (every rank calls every read/write, ranks with no rows included).
  // false: independent transfers; each rank reads on its own (e.g. a pipeline reading
  // arbitrary row ranges). Writes of gzip-compressed datasets need collective transfers.
  bool collective = true;
  // With collective transfers: true keeps the collective call (every rank takes part) but lets
  // each rank do its own MPI-IO underneath (H5FD_MPIO_INDIVIDUAL_IO) instead of MPI-IO's
  // two-phase collective buffering. Faster when each rank's rows are one large contiguous
  // range of a node-local file (no shuffle of data between ranks); two-phase (false) is what
  // parallel file systems (Lustre, GPFS) want, and what writes of compressed datasets need.
  bool individual_io = false;
  // Target size of one transfer. Reads and writes go in row blocks of about this many bytes,
  // aligned to chunk boundaries, which bounds HDF5's conversion buffers and keeps every
  // MPI-IO request far below MPI's 2 GiB count limit. Larger: fewer calls; smaller: less
  // memory inside HDF5.
  int64_t block_bytes = int64_t{64} << 20;
  // Files created with the HDF5 1.8+ format (libver bounds [1.8, latest]), whose metadata
  // carries checksums, so flipped metadata bytes are detected on read. Readers of HDF5 1.8 and
  // later (h5py included) read these files; files written by HDF5 1.6 tools do not need it.
  bool checksummed_metadata = false;
};

// One dataset as listed by Hdf5File::ListDatasets / Describe.
struct Hdf5DatasetInfo {
  std::string name;                  // full path inside the file without the leading '/'
  std::string type_name;             // "uint8", "float32", ... or the unsupported type's name
  std::optional<DType> dtype;        // empty when the type has no Tensor dtype
  Shape shape;                       // [] for a scalar dataset
  Shape chunk;                       // empty for contiguous/compact layouts
  int gzip_level = -1;               // deflate level, -1 when not compressed with deflate
  std::vector<std::string> filters;  // names of all filters in the pipeline ("deflate", ...)
};

// RAII owner of one HDF5 identifier (file, dataset, dataspace, property list, type).
class H5Id {
 public:
  H5Id() = default;
  explicit H5Id(hid_t id) : id_(id) {}
  ~H5Id() { Reset(); }
  H5Id(H5Id&& other) noexcept : id_(other.id_) { other.id_ = H5I_INVALID_HID; }
  H5Id& operator=(H5Id&& other) noexcept;
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  hid_t get() const { return id_; }
  void Reset();
  // Gives up ownership without closing; returns the identifier (the caller closes it).
  hid_t Release() { return std::exchange(id_, H5I_INVALID_HID); }

 private:
  hid_t id_ = H5I_INVALID_HID;
};

class Hdf5File {
 public:
  // Opens an existing file read-only. Collective over `comm`.
  // Throws kNotFound when the file does not exist, kIo when HDF5 cannot open it.
  static Hdf5File Open(const std::string& path, Communicator comm, const Hdf5Options& options = {});
  // Creates the file, replacing an existing one. Collective over `comm`.
  static Hdf5File Create(const std::string& path, Communicator comm,
                         const Hdf5Options& options = {});

  Hdf5File(Hdf5File&&) noexcept;
  Hdf5File& operator=(Hdf5File&&) noexcept;
  // Closes the file. Collective when the file was opened through MPI-IO.
  ~Hdf5File();
  // Closes the file now and reports failure (closing flushes the data): throws Error(kIo) naming
  // the file. REQUIRES: every dataset, group and attribute of the file is closed. Collective
  // like the destructor; afterwards only path(), rank(), size() and the reductions are valid.
  void Close();

  const std::string& path() const { return path_; }
  const Hdf5Options& options() const { return options_; }
  hid_t id() const { return file_.get(); }
  hid_t transfer_list() const { return dxpl_.get(); }  // data transfer property list
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool uses_mpio() const { return mpio_; }
  // The communicator (a duplicate owned by this object); MPI's null communicator without MPI.
  Communicator comm() const { return comm_; }
  // In-place reductions over the file's ranks (see the free functions above); no-ops for a file
  // opened by one rank or without MPI.
  void AllreduceSum(uint64_t* values, int count) const;
  void AllreduceSum(double* values, int count) const;
  void AllreduceMax(int64_t* values, int count) const;

  // Every dataset in the file, depth-first in name order (groups are walked).
  std::vector<Hdf5DatasetInfo> ListDatasets() const;
  // One dataset. Throws kNotFound naming the file, the dataset and the datasets there are.
  Hdf5DatasetInfo Describe(const std::string& name) const;
  bool HasDataset(const std::string& name) const;
  // Whether `name` (a path from the root) names any object: group, dataset or named type.
  // Each level is checked, so a missing parent group is `false`, not an error.
  bool HasLink(const std::string& name) const;
  // Opens a dataset; throws like Describe.
  H5Id OpenDataset(const std::string& name) const;

 private:
  Hdf5File() = default;
  static Hdf5File OpenOrCreate(const std::string& path, Communicator comm,
                               const Hdf5Options& options, bool create);

  std::string path_;
  Hdf5Options options_;
  H5Id file_;
  H5Id dxpl_;
  Communicator comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool mpio_ = false;
};

// The HDF5 native memory type for a Tensor dtype (H5T_NATIVE_UINT8, ...); not to be closed.
hid_t Hdf5NativeType(DType dtype);

// Describes an open dataset (used by Describe and by the readers).
Hdf5DatasetInfo DescribeDataset(hid_t dataset, const std::string& name, const std::string& path);

}  // namespace shardflow::io
