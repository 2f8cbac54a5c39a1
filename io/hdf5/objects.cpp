#include "io/hdf5/objects.hpp"

#include <algorithm>
#include <cstring>

#include "core/check_hdf5.hpp"

namespace shardflow::io {
namespace {

hsize_t Product(const std::vector<hsize_t>& dims, size_t from) {
  hsize_t n = 1;
  for (size_t i = from; i < dims.size(); ++i) n *= dims[i];
  return n;
}

// Appends the blocks of flat range [begin, end) of the sub-array dims[d:], whose position in the
// leading dimensions is `prefix` (one index per dimension before d). A range inside one row of
// dimension d recurses into that row; otherwise it is a partial first row (recursion), a block
// of whole rows, and a partial last row (recursion).
void AppendBlocks(const std::vector<hsize_t>& dims, size_t d, std::vector<hsize_t>& prefix,
                  hsize_t begin, hsize_t end, std::vector<Hdf5Block>* out) {
  if (begin >= end) return;
  auto block = [&](hsize_t first_row, hsize_t rows) {
    Hdf5Block b;
    b.start = prefix;
    b.count.assign(prefix.size(), 1);
    b.start.push_back(first_row);
    b.count.push_back(rows);
    for (size_t i = d + 1; i < dims.size(); ++i) {
      b.start.push_back(0);
      b.count.push_back(dims[i]);
    }
    out->push_back(std::move(b));
  };
  const hsize_t inner = Product(dims, d + 1);
  if (inner == 0) return;  // no elements: only an empty range fits
  if (inner == 1) {        // the last dimension (or trailing dimensions of extent 1)
    block(begin, end - begin);
    return;
  }
  hsize_t first = begin / inner;
  const hsize_t last = end / inner;
  const hsize_t head = begin % inner;
  const hsize_t tail = end % inner;
  if (first == last) {
    prefix.push_back(first);
    AppendBlocks(dims, d + 1, prefix, head, tail, out);
    prefix.pop_back();
    return;
  }
  if (head != 0) {
    prefix.push_back(first);
    AppendBlocks(dims, d + 1, prefix, head, inner, out);
    prefix.pop_back();
    ++first;
  }
  if (last > first) block(first, last - first);
  if (tail != 0) {
    prefix.push_back(last);
    AppendBlocks(dims, d + 1, prefix, 0, tail, out);
    prefix.pop_back();
  }
}

H5Id StringType(size_t length, const ErrorContext& ctx) {
  H5Id type(SF_CHECK_H5(H5Tcopy(H5T_C_S1), ctx));
  SF_CHECK_H5(H5Tset_size(type.get(), std::max<size_t>(length, 1)), ctx);
  SF_CHECK_H5(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), ctx);
  return type;
}

std::string Padded(const std::string& value) {
  std::string padded = value;
  padded.resize(std::max<size_t>(value.size(), 1), '\0');
  return padded;
}

H5Id OpenObject(const Hdf5File& file, const std::string& object, const ErrorContext& ctx) {
  return H5Id(SF_CHECK_H5(H5Oopen(file.id(), object.c_str(), H5P_DEFAULT), ctx));
}

void CreateAttribute(const Hdf5File& file, const std::string& object, const std::string& name,
                     hid_t type, const void* value) {
  const ErrorContext ctx{.file = file.path(), .key = object + "@" + name};
  H5Id obj = OpenObject(file, object, ctx);
  H5Id space(SF_CHECK_H5(H5Screate(H5S_SCALAR), ctx));
  H5Id attr(SF_CHECK_H5(
      H5Acreate2(obj.get(), name.c_str(), type, space.get(), H5P_DEFAULT, H5P_DEFAULT), ctx));
  SF_CHECK_H5(H5Awrite(attr.get(), type, value), ctx);
}

// The text of a fixed-length string held by an attribute or a scalar dataset.
std::string ReadFixedString(hid_t handle, bool is_attr, const ErrorContext& ctx) {
  H5Id type(is_attr ? SF_CHECK_H5(H5Aget_type(handle), ctx)
                    : SF_CHECK_H5(H5Dget_type(handle), ctx));
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0) {
    throw Error(ErrorCode::kDataLoss, "'" + ctx.key + "' is not a fixed-length string", ctx);
  }
  std::string s(H5Tget_size(type.get()), '\0');
  if (is_attr) {
    SF_CHECK_H5(H5Aread(handle, type.get(), s.data()), ctx);
  } else {
    H5Id space(SF_CHECK_H5(H5Dget_space(handle), ctx));
    if (SF_CHECK_H5(H5Sget_simple_extent_npoints(space.get()), ctx) != 1) {
      throw Error(ErrorCode::kDataLoss, "'" + ctx.key + "' is not a scalar string", ctx);
    }
    SF_CHECK_H5(H5Dread(handle, type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, s.data()), ctx);
  }
  s.resize(std::strlen(s.c_str()));
  return s;
}

// The slab's selection on `space` (a dataset's dataspace) with `op`; an error naming the
// dataset when the slab has the wrong rank or runs past the dataset.
void SelectSlab(hid_t space, H5S_seloper_t op, const Hdf5Slab& slab,
                const std::vector<hsize_t>& dims, const ErrorContext& ctx) {
  const size_t n = dims.size();
  bool fits = slab.start.size() == n && slab.stride.size() == n && slab.count.size() == n &&
              slab.block.size() == n;
  for (size_t i = 0; fits && i < n; ++i) {
    const hsize_t last = slab.count[i] == 0 || slab.block[i] == 0
                             ? 0
                             : slab.start[i] + (slab.count[i] - 1) * slab.stride[i] + slab.block[i];
    fits = last <= dims[i] && (slab.count[i] <= 1 || slab.stride[i] >= slab.block[i]);
  }
  if (!fits) {
    throw Error(ErrorCode::kInvalidArgument,
                "hyperslab does not fit the dataset of " + std::to_string(n) + " dimensions", ctx);
  }
  if (n == 0) {
    SF_CHECK_H5(H5Sselect_all(space), ctx);
    return;
  }
  SF_CHECK_H5(H5Sselect_hyperslab(space, op, slab.start.data(), slab.stride.data(),
                                  slab.count.data(), slab.block.data()),
              ctx);
}

// WriteSlabs and ReadSlabs: one transfer of every piece; memory ranges must increase.
void TransferSlabs(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
                   const std::vector<SlabPiece>& pieces, void* base, bool write) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  const std::vector<hsize_t> dims = DatasetDims(file, dataset, name);
  H5Id file_space(SF_CHECK_H5(H5Dget_space(dataset), ctx));
  hsize_t mem_dims = 1;
  int64_t previous_end = 0;
  for (const SlabPiece& p : pieces) {
    if (p.mem_offset < previous_end) {
      throw Error(ErrorCode::kInternal, "slab pieces out of memory order", ctx);
    }
    previous_end = p.mem_offset + p.slab.Elements();
    mem_dims = std::max(mem_dims, static_cast<hsize_t>(previous_end));
  }
  H5Id mem_space(SF_CHECK_H5(H5Screate_simple(1, &mem_dims, nullptr), ctx));
  SF_CHECK_H5(H5Sselect_none(file_space.get()), ctx);
  SF_CHECK_H5(H5Sselect_none(mem_space.get()), ctx);
  bool any = false;
  for (const SlabPiece& p : pieces) {
    const hsize_t count = static_cast<hsize_t>(p.slab.Elements());
    if (count == 0) continue;
    const hsize_t start = static_cast<hsize_t>(p.mem_offset);
    const H5S_seloper_t op = any ? H5S_SELECT_OR : H5S_SELECT_SET;
    SF_CHECK_H5(H5Sselect_hyperslab(mem_space.get(), op, &start, nullptr, &count, nullptr), ctx);
    SelectSlab(file_space.get(), op, p.slab, dims, ctx);
    any = true;
  }
  if (write) {
    SF_CHECK_H5(
        H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), file.transfer_list(), base),
        ctx);
  } else if (any || file.uses_mpio()) {
    SF_CHECK_H5(
        H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), file.transfer_list(), base),
        ctx);
  }
}

}  // namespace

int64_t Hdf5Slab::Elements() const {
  int64_t n = 1;
  for (size_t i = 0; i < count.size() && i < block.size(); ++i) {
    n *= static_cast<int64_t>(count[i] * block[i]);
  }
  return n;
}

std::vector<Hdf5Block> FlatRangeBlocks(const std::vector<hsize_t>& dims, FlatRange range) {
  std::vector<Hdf5Block> out;
  if (range.end <= range.begin) return out;
  if (dims.empty()) {
    out.push_back({});
    return out;
  }
  std::vector<hsize_t> prefix;
  AppendBlocks(dims, 0, prefix, static_cast<hsize_t>(range.begin), static_cast<hsize_t>(range.end),
               &out);
  return out;
}

void CreateGroup(const Hdf5File& file, const std::string& name) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  H5Id gcpl(SF_CHECK_H5(H5Pcreate(H5P_GROUP_CREATE), ctx));
  SF_CHECK_H5(H5Pset_obj_track_times(gcpl.get(), false), ctx);  // same data, same bytes
  H5Id group(
      SF_CHECK_H5(H5Gcreate2(file.id(), name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT), ctx));
}

H5Id CreateChecksummedDataset(const Hdf5File& file, const std::string& name, hid_t type,
                              const std::vector<hsize_t>& dims, int64_t max_chunk_bytes) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  H5Id lcpl(SF_CHECK_H5(H5Pcreate(H5P_LINK_CREATE), ctx));
  SF_CHECK_H5(H5Pset_create_intermediate_group(lcpl.get(), 1), ctx);
  H5Id space(
      SF_CHECK_H5(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), ctx));
  H5Id dcpl(SF_CHECK_H5(H5Pcreate(H5P_DATASET_CREATE), ctx));
  const hsize_t n = Product(dims, 0);
  if (n > 0 && !dims.empty()) {
    std::vector<hsize_t> chunk = dims;
    const hsize_t row_bytes = n / dims[0] * H5Tget_size(type);
    chunk[0] = std::max<hsize_t>(
        1, std::min<hsize_t>(dims[0], static_cast<hsize_t>(max_chunk_bytes) / row_bytes));
    SF_CHECK_H5(H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data()), ctx);
    SF_CHECK_H5(H5Pset_fletcher32(dcpl.get()), ctx);
  }
  SF_CHECK_H5(H5Pset_obj_track_times(dcpl.get(), false), ctx);
  return H5Id(SF_CHECK_H5(
      H5Dcreate2(file.id(), name.c_str(), type, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
      ctx));
}

void WriteFlatRanges(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
                     const void* base, const std::vector<FlatRange>& ranges) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  const std::vector<hsize_t> dims = DatasetDims(file, dataset, name);
  const hsize_t n = Product(dims, 0);
  int64_t previous_end = 0;
  for (const FlatRange& r : ranges) {
    if (r.begin < previous_end || r.end < r.begin || static_cast<hsize_t>(r.end) > n) {
      throw Error(ErrorCode::kInvalidArgument,
                  "flat range [" + std::to_string(r.begin) + "," + std::to_string(r.end) +
                      ") is unsorted, overlapping or outside the " + std::to_string(n) +
                      " elements of the dataset",
                  ctx);
    }
    previous_end = r.end;
  }
  H5Id file_space(SF_CHECK_H5(H5Dget_space(dataset), ctx));
  const hsize_t mem_dims = std::max<hsize_t>(n, 1);
  H5Id mem_space(SF_CHECK_H5(H5Screate_simple(1, &mem_dims, nullptr), ctx));
  SF_CHECK_H5(H5Sselect_none(file_space.get()), ctx);
  SF_CHECK_H5(H5Sselect_none(mem_space.get()), ctx);
  bool any = false;
  for (const FlatRange& r : ranges) {
    if (r.end == r.begin) continue;
    const H5S_seloper_t op = any ? H5S_SELECT_OR : H5S_SELECT_SET;
    const hsize_t start = static_cast<hsize_t>(r.begin);
    const hsize_t count = static_cast<hsize_t>(r.end - r.begin);
    SF_CHECK_H5(H5Sselect_hyperslab(mem_space.get(), op, &start, nullptr, &count, nullptr), ctx);
    if (dims.empty()) {
      SF_CHECK_H5(H5Sselect_all(file_space.get()), ctx);
    } else {
      bool first = !any;
      for (const Hdf5Block& b : FlatRangeBlocks(dims, r)) {
        SF_CHECK_H5(H5Sselect_hyperslab(file_space.get(), first ? H5S_SELECT_SET : H5S_SELECT_OR,
                                        b.start.data(), nullptr, b.count.data(), nullptr),
                    ctx);
        first = false;
      }
    }
    any = true;
  }
  // HDF5 does not modify the buffer of a write; the cast only satisfies its void* signature.
  SF_CHECK_H5(H5Dwrite(dataset, mem_type, mem_space.get(), file_space.get(), file.transfer_list(),
                       const_cast<void*>(base)),
              ctx);
}

void WriteSlabs(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
                const void* base, const std::vector<SlabPiece>& pieces) {
  // HDF5 does not modify the buffer of a write; the cast only satisfies its void* signature.
  TransferSlabs(file, dataset, name, mem_type, pieces, const_cast<void*>(base), true);
}

void ReadSlabs(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
               const std::vector<SlabPiece>& pieces, void* base) {
  TransferSlabs(file, dataset, name, mem_type, pieces, base, false);
}

void WriteStringDataset(const Hdf5File& file, const std::string& name, const std::string& value) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  H5Id type = StringType(value.size(), ctx);
  H5Id space(SF_CHECK_H5(H5Screate(H5S_SCALAR), ctx));
  H5Id dcpl(SF_CHECK_H5(H5Pcreate(H5P_DATASET_CREATE), ctx));
  SF_CHECK_H5(H5Pset_obj_track_times(dcpl.get(), false), ctx);
  H5Id dataset(SF_CHECK_H5(H5Dcreate2(file.id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT,
                                      dcpl.get(), H5P_DEFAULT),
                           ctx));
  // Rank 0 writes; the others take part in the (possibly collective) call with no selection.
  H5Id file_space(SF_CHECK_H5(H5Screate(H5S_SCALAR), ctx));
  H5Id mem_space(SF_CHECK_H5(H5Screate(H5S_SCALAR), ctx));
  if (file.rank() != 0) {
    SF_CHECK_H5(H5Sselect_none(file_space.get()), ctx);
    SF_CHECK_H5(H5Sselect_none(mem_space.get()), ctx);
  }
  const std::string padded = Padded(value);
  SF_CHECK_H5(H5Dwrite(dataset.get(), type.get(), mem_space.get(), file_space.get(),
                       file.transfer_list(), padded.data()),
              ctx);
}

void WriteAttribute(const Hdf5File& file, const std::string& object, const std::string& name,
                    int64_t value) {
  CreateAttribute(file, object, name, H5T_NATIVE_INT64, &value);
}

void WriteAttribute(const Hdf5File& file, const std::string& object, const std::string& name,
                    const std::string& value) {
  H5Id type = StringType(value.size(), {.file = file.path(), .key = object + "@" + name});
  const std::string padded = Padded(value);
  CreateAttribute(file, object, name, type.get(), padded.data());
}

bool HasAttribute(const Hdf5File& file, const std::string& object, const std::string& name) {
  const ErrorContext ctx{.file = file.path(), .key = object + "@" + name};
  return SF_CHECK_H5(H5Aexists_by_name(file.id(), object.c_str(), name.c_str(), H5P_DEFAULT), ctx) >
         0;
}

int64_t ReadIntAttribute(const Hdf5File& file, const std::string& object, const std::string& name) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  H5Id attr(SF_CHECK_H5(
      H5Aopen_by_name(file.id(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), ctx));
  int64_t value = 0;
  SF_CHECK_H5(H5Aread(attr.get(), H5T_NATIVE_INT64, &value), ctx);
  return value;
}

std::string ReadStringAttribute(const Hdf5File& file, const std::string& object,
                                const std::string& name) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  H5Id attr(SF_CHECK_H5(
      H5Aopen_by_name(file.id(), object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), ctx));
  return ReadFixedString(attr.get(), /*is_attr=*/true, ctx);
}

std::string ReadStringDataset(const Hdf5File& file, const std::string& name) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  H5Id dataset(SF_CHECK_H5(H5Dopen2(file.id(), name.c_str(), H5P_DEFAULT), ctx));
  return ReadFixedString(dataset.get(), /*is_attr=*/false, ctx);
}

std::vector<hsize_t> DatasetDims(const Hdf5File& file, hid_t dataset, const std::string& name) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  H5Id space(SF_CHECK_H5(H5Dget_space(dataset), ctx));
  const int rank = SF_CHECK_H5(H5Sget_simple_extent_ndims(space.get()), ctx);
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  SF_CHECK_H5(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), ctx);
  return dims;
}

void ReadSlab(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
              const Hdf5Slab& slab, void* out) {
  const ErrorContext ctx{.file = file.path(), .key = name};
  const std::vector<hsize_t> dims = DatasetDims(file, dataset, name);
  H5Id file_space(SF_CHECK_H5(H5Dget_space(dataset), ctx));
  SelectSlab(file_space.get(), H5S_SELECT_SET, slab, dims, ctx);
  const hsize_t n = static_cast<hsize_t>(slab.Elements());
  if (n == 0) return;
  H5Id mem_space(SF_CHECK_H5(H5Screate_simple(1, &n, nullptr), ctx));
  SF_CHECK_H5(
      H5Dread(dataset, mem_type, mem_space.get(), file_space.get(), file.transfer_list(), out),
      ctx);
}

void ReadWholeDataset(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
                      void* out) {
  if (Product(DatasetDims(file, dataset, name), 0) == 0) return;
  SF_CHECK_H5(H5Dread(dataset, mem_type, H5S_ALL, H5S_ALL, file.transfer_list(), out),
              ErrorContext{.file = file.path(), .key = name});
}

}  // namespace shardflow::io
