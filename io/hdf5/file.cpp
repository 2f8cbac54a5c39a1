#include "io/hdf5/file.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <utility>

#include "core/check_hdf5.hpp"
#include "core/check_mpi.hpp"
#include "core/mpi_env.hpp"

namespace shardflow::io {

H5Id& H5Id::operator=(H5Id&& other) noexcept {
  if (this != &other) {
    Reset();
    id_ = other.id_;
    other.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void H5Id::Reset() {
  if (id_ >= 0) {
    // H5Idec_ref closes any kind of identifier (file, dataset, space, plist, type). A failure
    // here cannot be reported from a destructor; HDF5's automatic printing is off.
    H5Idec_ref(id_);
  }
  id_ = H5I_INVALID_HID;
}

Communicator SelfCommunicator() { return MPI_COMM_SELF; }

namespace {

bool MpiIsInitialized() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// Whether collectives over `comm` must talk to other processes.
bool Shared(Communicator comm) { return MpiIsInitialized() && CommSize(comm) > 1; }

}  // namespace

int CommRank(Communicator comm) {
  if (!MpiIsInitialized() || comm == MPI_COMM_NULL) return 0;
  int rank = 0;
  SF_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  return rank;
}

int CommSize(Communicator comm) {
  if (!MpiIsInitialized() || comm == MPI_COMM_NULL) return 1;
  int size = 1;
  SF_CHECK_MPI(MPI_Comm_size(comm, &size));
  return size;
}

namespace {

// In place over values[0..count) when `comm` has peers; nothing on a lone rank.
void AllreduceInPlace(Communicator comm, void* values, int count, MPI_Datatype type, MPI_Op op) {
  if (Shared(comm)) SF_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values, count, type, op, comm));
}

}  // namespace

void AllreduceSum(Communicator comm, int64_t* values, int count) {
  AllreduceInPlace(comm, values, count, MPI_INT64_T, MPI_SUM);
}

void AllreduceSum(Communicator comm, uint64_t* values, int count) {
  AllreduceInPlace(comm, values, count, MPI_UINT64_T, MPI_SUM);
}

void AllreduceSum(Communicator comm, double* values, int count) {
  AllreduceInPlace(comm, values, count, MPI_DOUBLE, MPI_SUM);
}

void AllreduceMax(Communicator comm, int64_t* values, int count) {
  AllreduceInPlace(comm, values, count, MPI_INT64_T, MPI_MAX);
}

void Broadcast(Communicator comm, std::string* bytes, int root) {
  if (!Shared(comm)) return;
  // Lengths past MPI's int count are refused rather than truncated.
  int64_t length = static_cast<int64_t>(bytes->size());
  SF_CHECK_MPI(MPI_Bcast(&length, 1, MPI_INT64_T, root, comm));
  if (length > std::numeric_limits<int>::max()) {
    throw Error(ErrorCode::kInvalidArgument,
                "broadcast of " + std::to_string(length) + " bytes exceeds MPI's int count",
                {.rank = CommRank(comm)});
  }
  bytes->resize(static_cast<size_t>(length));
  SF_CHECK_MPI(MPI_Bcast(bytes->data(), static_cast<int>(length), MPI_CHAR, root, comm));
}

std::vector<std::vector<int64_t>> AllgatherInt64(Communicator comm,
                                                 const std::vector<int64_t>& mine) {
  if (!Shared(comm)) return {mine};
  const int size = CommSize(comm);
  const int count = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size));
  SF_CHECK_MPI(MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, comm));
  std::vector<int> displs(static_cast<size_t>(size), 0);
  int64_t total = 0;
  for (int r = 0; r < size; ++r) {
    displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += counts[static_cast<size_t>(r)];
  }
  if (total > std::numeric_limits<int>::max()) {
    throw Error(ErrorCode::kInvalidArgument, "all-gather exceeds MPI's int count",
                {.rank = CommRank(comm)});
  }
  std::vector<int64_t> flat(static_cast<size_t>(total));
  SF_CHECK_MPI(MPI_Allgatherv(mine.data(), count, MPI_INT64_T, flat.data(), counts.data(),
                              displs.data(), MPI_INT64_T, comm));
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    const auto first = flat.begin() + displs[static_cast<size_t>(r)];
    out[static_cast<size_t>(r)].assign(first, first + counts[static_cast<size_t>(r)]);
  }
  return out;
}

void AgreeOnStatus(Communicator comm, const Status& local) {
  if (!Shared(comm)) {
    ThrowIfError(local);
    return;
  }
  const int rank = CommRank(comm);
  const int size = CommSize(comm);
  // size - (lowest failing rank), so that MAX picks the lowest; 0 when every rank is ok.
  int64_t flag = local.ok() ? 0 : size - rank;
  AllreduceMax(comm, &flag, 1);
  if (flag == 0) return;
  const int failed = static_cast<int>(size - flag);
  std::string text = local.ToString();
  int64_t code = static_cast<int64_t>(local.code());
  Broadcast(comm, &text, failed);
  SF_CHECK_MPI(MPI_Bcast(&code, 1, MPI_INT64_T, failed, comm));
  if (rank == failed) ThrowIfError(local);
  throw Error(static_cast<ErrorCode>(code), "rank " + std::to_string(failed) + " failed: " + text,
              {.rank = rank});
}

hid_t Hdf5NativeType(DType dtype) {
  switch (dtype) {
    case DType::kUInt8:
      return H5T_NATIVE_UINT8;
    case DType::kInt32:
      return H5T_NATIVE_INT32;
    case DType::kInt64:
      return H5T_NATIVE_INT64;
    case DType::kFloat32:
      return H5T_NATIVE_FLOAT;
    case DType::kFloat64:
      return H5T_NATIVE_DOUBLE;
  }
  throw Error(ErrorCode::kInternal, "unknown dtype");
}

namespace {

// The Tensor dtype of an HDF5 file type, and its name for messages.
std::pair<std::optional<DType>, std::string> ClassifyType(hid_t type) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t bytes = H5Tget_size(type);
  const std::string bits = std::to_string(bytes * 8);
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    const std::string name = (is_signed ? "int" : "uint") + bits;
    if (!is_signed && bytes == 1) return {DType::kUInt8, name};
    if (is_signed && bytes == 4) return {DType::kInt32, name};
    if (is_signed && bytes == 8) return {DType::kInt64, name};
    return {std::nullopt, name};
  }
  if (cls == H5T_FLOAT) {
    const std::string name = "float" + bits;
    if (bytes == 4) return {DType::kFloat32, name};
    if (bytes == 8) return {DType::kFloat64, name};
    return {std::nullopt, name};
  }
  switch (cls) {
    case H5T_STRING:
      return {std::nullopt, "string"};
    case H5T_COMPOUND:
      return {std::nullopt, "compound"};
    case H5T_ENUM:
      return {std::nullopt, "enum"};
    case H5T_ARRAY:
      return {std::nullopt, "array"};
    case H5T_VLEN:
      return {std::nullopt, "vlen"};
    case H5T_OPAQUE:
      return {std::nullopt, "opaque"};
    case H5T_REFERENCE:
      return {std::nullopt, "reference"};
    default:
      return {std::nullopt, "unknown type class " + std::to_string(static_cast<int>(cls))};
  }
}

struct VisitState {
  const std::string* path;
  std::vector<Hdf5DatasetInfo>* out;
};

herr_t VisitObject(hid_t root, const char* name, const H5O_info_t* info, void* data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  auto* state = static_cast<VisitState*>(data);
  H5Id dataset(H5Dopen2(root, name, H5P_DEFAULT));
  if (dataset.get() < 0) return -1;
  state->out->push_back(DescribeDataset(dataset.get(), name, *state->path));
  return 0;
}

std::string DatasetNames(const std::vector<Hdf5DatasetInfo>& datasets) {
  std::string names;
  for (const auto& d : datasets) names += (names.empty() ? "" : ", ") + d.name;
  return names.empty() ? "(none)" : names;
}

}  // namespace

Hdf5DatasetInfo DescribeDataset(hid_t dataset, const std::string& name, const std::string& path) {
  const ErrorContext ctx{.file = path, .key = name};
  Hdf5DatasetInfo info;
  info.name = name;
  H5Id type(SF_CHECK_H5(H5Dget_type(dataset), ctx));
  auto [dtype, type_name] = ClassifyType(type.get());
  info.dtype = dtype;
  info.type_name = type_name;
  H5Id space(SF_CHECK_H5(H5Dget_space(dataset), ctx));
  const int rank = SF_CHECK_H5(H5Sget_simple_extent_ndims(space.get()), ctx);
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  SF_CHECK_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), ctx);
  info.shape.assign(dims.begin(), dims.end());
  H5Id dcpl(SF_CHECK_H5(H5Dget_create_plist(dataset), ctx));
  if (H5Pget_layout(dcpl.get()) == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(static_cast<size_t>(rank));
    SF_CHECK_H5(H5Pget_chunk(dcpl.get(), rank, chunk.data()), ctx);
    info.chunk.assign(chunk.begin(), chunk.end());
  }
  const int nfilters = SF_CHECK_H5(H5Pget_nfilters(dcpl.get()), ctx);
  for (int i = 0; i < nfilters; ++i) {
    unsigned flags = 0;
    size_t nvalues = 4;
    unsigned values[4] = {};
    char fname[64] = {};
    const H5Z_filter_t filter =
        SF_CHECK_H5(H5Pget_filter2(dcpl.get(), static_cast<unsigned>(i), &flags, &nvalues, values,
                                   sizeof(fname), fname, nullptr),
                    ctx);
    if (filter == H5Z_FILTER_DEFLATE) {
      info.gzip_level = nvalues > 0 ? static_cast<int>(values[0]) : 0;
      info.filters.push_back("deflate");
    } else if (filter == H5Z_FILTER_SHUFFLE) {
      info.filters.push_back("shuffle");
    } else if (filter == H5Z_FILTER_FLETCHER32) {
      info.filters.push_back("fletcher32");
    } else {
      info.filters.push_back(fname[0] ? fname : "filter " + std::to_string(filter));
    }
  }
  return info;
}

Hdf5File Hdf5File::Open(const std::string& path, Communicator comm, const Hdf5Options& options) {
  return OpenOrCreate(path, comm, options, /*create=*/false);
}

Hdf5File Hdf5File::Create(const std::string& path, Communicator comm, const Hdf5Options& options) {
  return OpenOrCreate(path, comm, options, /*create=*/true);
}

Hdf5File Hdf5File::OpenOrCreate(const std::string& path, Communicator comm,
                                const Hdf5Options& options, bool create) {
  Hdf5File f;
  f.path_ = path;
  f.options_ = options;
  if (options.block_bytes <= 0) {
    throw Error(
        ErrorCode::kInvalidArgument,
        "Hdf5Options::block_bytes must be positive, got " + std::to_string(options.block_bytes),
        {.file = path});
  }
  if (MpiIsInitialized()) {
    SF_CHECK_MPI(MPI_Comm_dup(comm, &f.comm_));
    SF_CHECK_MPI(MPI_Comm_rank(f.comm_, &f.rank_));
    SF_CHECK_MPI(MPI_Comm_size(f.comm_, &f.size_));
  } else if (options.driver == Hdf5Options::Driver::kMpio) {
    throw Error(ErrorCode::kInvalidArgument, "the MPI-IO driver needs MPI to be initialised",
                {.file = path});
  }
  using Driver = Hdf5Options::Driver;
  if (options.driver == Driver::kSerial && f.size_ > 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "the serial HDF5 driver cannot be shared by " + std::to_string(f.size_) +
                    " ranks; use the MPI-IO driver",
                {.file = path});
  }
  f.mpio_ = options.driver == Driver::kMpio || (options.driver == Driver::kAuto && f.size_ > 1);

  const ErrorContext ctx{.file = path};
  if (!create && !std::filesystem::exists(path)) {
    throw Error(ErrorCode::kNotFound, "HDF5 file does not exist", {.file = path});
  }
  H5Id fapl(SF_CHECK_H5(H5Pcreate(H5P_FILE_ACCESS), ctx));
  f.dxpl_ = H5Id(SF_CHECK_H5(H5Pcreate(H5P_DATASET_XFER), ctx));
  if (f.mpio_) {
    SF_CHECK_H5(H5Pset_fapl_mpio(fapl.get(), f.comm_, MPI_INFO_NULL), ctx);
    SF_CHECK_H5(H5Pset_dxpl_mpio(f.dxpl_.get(),
                                 options.collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT),
                ctx);
    if (options.collective && options.individual_io) {
      SF_CHECK_H5(H5Pset_dxpl_mpio_collective_opt(f.dxpl_.get(), H5FD_MPIO_INDIVIDUAL_IO), ctx);
    }
  }
  if (create && options.checksummed_metadata) {
    SF_CHECK_H5(H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST), ctx);
  }
  if (create) {
    f.file_ = H5Id(SF_CHECK_H5(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                               ErrorContext{.file = path, .hint = "cannot create the file"}));
  } else {
    f.file_ =
        H5Id(SF_CHECK_H5(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()),
                         ErrorContext{.file = path, .hint = "is it an HDF5 file, and readable?"}));
  }
  return f;
}

Hdf5File::Hdf5File(Hdf5File&& other) noexcept { *this = std::move(other); }

Hdf5File& Hdf5File::operator=(Hdf5File&& other) noexcept {
  if (this != &other) {
    file_.Reset();
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    path_ = std::move(other.path_);
    options_ = other.options_;
    file_ = std::move(other.file_);
    dxpl_ = std::move(other.dxpl_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
    mpio_ = other.mpio_;
  }
  return *this;
}

Hdf5File::~Hdf5File() {
  if (mpio_ && size_ > 1 && UnwindingAlone()) {
    // Closing is collective and the other ranks may never join it: the error unwinding here
    // ends the job (core/mpi_env.hpp), which releases the file.
    file_.Release();
    dxpl_.Release();
    comm_ = MPI_COMM_NULL;
    return;
  }
  file_.Reset();
  dxpl_.Reset();
  if (comm_ != MPI_COMM_NULL && MpiIsInitialized()) MPI_Comm_free(&comm_);
}

void Hdf5File::Close() {
  if (file_.get() < 0) {
    throw Error(ErrorCode::kInvalidArgument, "the HDF5 file is already closed", {.file = path_});
  }
  dxpl_.Reset();
  const hid_t id = file_.Release();  // closed below, with the failure reported
  SF_CHECK_H5(H5Fclose(id), ErrorContext{.file = path_, .hint = "closing flushes the data"});
}

void Hdf5File::AllreduceSum(uint64_t* values, int count) const {
  if (size_ > 1) io::AllreduceSum(comm_, values, count);
}

void Hdf5File::AllreduceSum(double* values, int count) const {
  if (size_ > 1) io::AllreduceSum(comm_, values, count);
}

void Hdf5File::AllreduceMax(int64_t* values, int count) const {
  if (size_ > 1) io::AllreduceMax(comm_, values, count);
}

std::vector<Hdf5DatasetInfo> Hdf5File::ListDatasets() const {
  std::vector<Hdf5DatasetInfo> out;
  VisitState state{&path_, &out};
  SF_CHECK_H5(
      H5Ovisit2(file_.get(), H5_INDEX_NAME, H5_ITER_INC, VisitObject, &state, H5O_INFO_BASIC),
      ErrorContext{.file = path_});
  return out;
}

bool Hdf5File::HasDataset(const std::string& name) const {
  if (!HasLink(name)) return false;
  H5O_info_t info;
  SF_CHECK_H5(H5Oget_info_by_name2(file_.get(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT),
              ErrorContext{.file = path_, .key = name});
  return info.type == H5O_TYPE_DATASET;
}

bool Hdf5File::HasLink(const std::string& name) const {
  if (name.empty()) return false;
  // Walk the path one link at a time: H5Lexists requires every intermediate group to exist.
  std::string prefix;
  size_t start = name.front() == '/' ? 1 : 0;
  while (start <= name.size()) {
    const size_t slash = std::min(name.find('/', start), name.size());
    prefix.push_back('/');
    prefix.append(name, start, slash - start);
    if (SF_CHECK_H5(H5Lexists(file_.get(), prefix.c_str(), H5P_DEFAULT),
                    ErrorContext{.file = path_, .key = name}) <= 0) {
      return false;
    }
    start = slash + 1;
  }
  return true;
}

H5Id Hdf5File::OpenDataset(const std::string& name) const {
  if (name.empty() || name == "/" || !HasDataset(name)) {
    throw Error(
        ErrorCode::kNotFound, "no dataset '" + name + "' in the HDF5 file",
        {.file = path_, .key = name, .hint = "datasets there: " + DatasetNames(ListDatasets())});
  }
  return H5Id(SF_CHECK_H5(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT),
                          ErrorContext{.file = path_, .key = name}));
}

Hdf5DatasetInfo Hdf5File::Describe(const std::string& name) const {
  H5Id dataset = OpenDataset(name);
  return DescribeDataset(dataset.get(), name.front() == '/' ? name.substr(1) : name, path_);
}

}  // namespace shardflow::io
