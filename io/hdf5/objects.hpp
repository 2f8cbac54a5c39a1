// Groups, attributes, string datasets, checksummed datasets and flat-range transfers on an
// Hdf5File: the pieces a structured file (a checkpoint) is made of, beside the row-oriented
// Hdf5Writer/Hdf5Reader.
//
// Words used here: a dataset's *flat index* is an element's position in row-major order; a
// *flat range* [begin, end) is a run of consecutive flat indices, which in a dataset of rank > 1
// generally spans partial rows and is selected as a union of at most 2*rank-1 hyperslab blocks
// (FlatRangeBlocks).
//
// Collective contract on a file opened through MPI-IO: every function that creates or writes
// (CreateGroup, CreateChecksummedDataset, WriteAttribute, WriteStringDataset, WriteFlatRanges)
// is called by every rank, in the same order, with the same names, types, shapes and attribute
// values (HDF5 keeps one copy of the metadata; values that differ between ranks leave the file
// inconsistent). Data may differ: WriteFlatRanges writes each rank's own ranges, and
// WriteStringDataset writes rank 0's value. The readers work on any open file and are local
// to the calling rank on a file opened by one rank.
//
// Thread-safety: none (see Hdf5File). Errors are shardflow::Error naming the file and object;
// HDF5 failures are Error(kIo) carrying HDF5's error stack (SF_CHECK_H5).
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <string>
#include <vector>

#include "io/hdf5/file.hpp"

namespace shardflow::io {

// Flat indices [begin, end) of a dataset, in row-major order.
struct FlatRange {
  int64_t begin = 0;
  int64_t end = 0;
};

// A regular hyperslab (HDF5's H5Sselect_hyperslab): along dimension i, count[i] blocks of
// block[i] elements whose starts are stride[i] apart, the first at start[i]. Its elements are
// taken in row-major order of the dataset. A column slice [b, b + w) of an (R, C) dataset is
// start {0, b}, stride {1, 1}, count {1, 1}, block {R, w}; the same elements of the dataset's
// flat 1-D image are start {b}, stride {C}, count {R}, block {w}.
struct Hdf5Slab {
  std::vector<hsize_t> start;
  std::vector<hsize_t> stride;
  std::vector<hsize_t> count;
  std::vector<hsize_t> block;
  int64_t Elements() const;
};

// A slab's elements and where they are in memory: base[mem_offset, mem_offset + Elements()).
struct SlabPiece {
  Hdf5Slab slab;
  int64_t mem_offset = 0;
};

// One hyperslab block: `count` elements along each dimension from `start`.
struct Hdf5Block {
  std::vector<hsize_t> start;
  std::vector<hsize_t> count;
};

// The hyperslab blocks whose union is flat range `range` of a dataset of shape `dims`, in
// row-major order (at most 2*dims.size()-1 blocks; none for an empty range). A scalar
// dataset (no dims) has one element. REQUIRES: 0 <= begin <= end <= number of elements.
std::vector<Hdf5Block> FlatRangeBlocks(const std::vector<hsize_t>& dims, FlatRange range);

// ---- creating and writing (collective on an MPI-IO file) ----

// Creates group `name` (absolute path); its parent must exist.
void CreateGroup(const Hdf5File& file, const std::string& name);

// Creates dataset `name` (intermediate groups created as needed) of file type `type` and shape
// `dims`. A non-empty dataset is chunked, with the Fletcher-32 filter so every stored byte is
// checksummed: a chunk is the whole dataset, its first dimension capped so that a chunk holds
// at most `max_chunk_bytes`. An empty dataset is contiguous (nothing to checksum).
H5Id CreateChecksummedDataset(const Hdf5File& file, const std::string& name, hid_t type,
                              const std::vector<hsize_t>& dims, int64_t max_chunk_bytes);

// Writes the elements of open dataset `dataset` (named `name` for messages) at the flat ranges
// `ranges` (sorted, disjoint) from `base`, a buffer of `mem_type` laid out like the whole
// dataset: flat element i is base[i]; only the selected elements are read. One transfer per
// call; a rank with no ranges takes part with an empty selection.
void WriteFlatRanges(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
                     const void* base, const std::vector<FlatRange>& ranges);

// Writes `pieces` of open dataset `dataset` from `base` (a buffer of `mem_type`) in one transfer.
// REQUIRES: the slabs are disjoint and in increasing row-major order of the dataset, each one's
// elements in order, and their memory ranges disjoint and increasing in the same order (HDF5
// pairs the selected elements of file and memory in row-major order). A rank with no pieces
// takes part with an empty selection.
void WriteSlabs(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
                const void* base, const std::vector<SlabPiece>& pieces);
// The reverse: reads `pieces` into `base` in one transfer, under the same REQUIRES.
void ReadSlabs(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
               const std::vector<SlabPiece>& pieces, void* base);

// A scalar fixed-length string dataset (null-padded, at least one byte) holding rank 0's
// `value`; the other ranks' values are not written.
void WriteStringDataset(const Hdf5File& file, const std::string& name, const std::string& value);

// Scalar attributes of object `object` (a group or dataset path; "/" is the root).
void WriteAttribute(const Hdf5File& file, const std::string& object, const std::string& name,
                    int64_t value);
// A fixed-length null-padded string of at least one byte.
void WriteAttribute(const Hdf5File& file, const std::string& object, const std::string& name,
                    const std::string& value);

// ---- reading ----

bool HasAttribute(const Hdf5File& file, const std::string& object, const std::string& name);
// Throws Error(kIo) from HDF5 when absent or not convertible to int64.
int64_t ReadIntAttribute(const Hdf5File& file, const std::string& object, const std::string& name);
// Fixed-length strings only: anything else is Error(kDataLoss) naming the attribute.
std::string ReadStringAttribute(const Hdf5File& file, const std::string& object,
                                const std::string& name);
// A scalar fixed-length string dataset; anything else is Error(kDataLoss) naming it.
std::string ReadStringDataset(const Hdf5File& file, const std::string& name);

// The shape of an open dataset.
std::vector<hsize_t> DatasetDims(const Hdf5File& file, hid_t dataset, const std::string& name);
// Reads the elements of `slab` into `out` (slab.Elements() elements of `mem_type`, row-major).
// Throws Error(kInvalidArgument) naming the dataset when the slab does not fit its shape.
void ReadSlab(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
              const Hdf5Slab& slab, void* out);
// Reads every element of an open dataset into `out` (as many elements of `mem_type`).
void ReadWholeDataset(const Hdf5File& file, hid_t dataset, const std::string& name, hid_t mem_type,
                      void* out);

}  // namespace shardflow::io
