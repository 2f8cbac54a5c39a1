// The whole model's checkpoint layout planned from the parts that the ranks of a partitioned
// save hold (pipeline stages, tensor-parallel slices, or the whole model), and the slab
// arithmetic that places a part's elements in the whole model's datasets.
//
// Words used here: a *part* is what one rank holds (core's Sequential with a LayerRange, maybe
// with parameters split along one axis); a *slice* is a part's piece of a parameter split along
// `split_axis`: [split_begin, split_begin + extent) of full_shape[split_axis]; a parameter held
// *whole* may be held by several ranks (replicated: the tensor ways of a stage), and is then
// written by the lowest of them. A *run* is a maximal stretch of a held slice that is contiguous
// in the whole parameter's row-major order.
//
// Every rank computes the plan from every rank's summary (all-gathered), so all reach the same
// plan, or the same error.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/arena.hpp"
#include "core/error.hpp"
#include "io/checkpoint/slices.hpp"
#include "io/hdf5/objects.hpp"

namespace shardflow::checkpoint_layout {

// One parameter as a part holds it.
struct PartParam {
  std::string name;  // layer_name/name, as the whole model names it
  int layer = 0;     // whole-model layer index
  Shape shape;       // the held shape
  int split_axis = -1;
  int64_t split_begin = 0;
  Shape full_shape;            // the whole parameter's shape
  std::vector<SliceCrc> runs;  // offsets in the whole parameter's elements, with their CRCs
};

struct PartBuffer {
  std::string name;
  Shape shape;
};

// Everything the other ranks need to know about one rank's part.
struct PartSummary {
  int first_layer = 0;  // [first_layer, end_layer) of spec_layers
  int end_layer = 0;
  int spec_layers = 0;
  std::string spec;         // the part's layers' spec
  std::string input_shape;  // the part's input per sample (ShapeToString)
  std::string optimizer;    // empty: none
  std::vector<std::string> slots;
  std::vector<PartParam> params;  // in the part's declaration order
  std::vector<PartBuffer> buffers;
};

std::string EncodePartSummary(const PartSummary& part);
PartSummary DecodePartSummary(const std::string& bytes);

// One parameter of the whole model, and who writes it.
struct LayoutParam {
  std::string name;
  int layer = 0;
  Shape full_shape;
  int64_t offset = 0;  // in the whole model's arena (and in each flat optimizer slot)
  int64_t size = 0;
  std::vector<int> writers;  // the lowest holder of a whole parameter, or every slice's holder
  uint32_t crc = 0;          // CRC-32 of the whole parameter's bytes, from the writers' runs
};

struct LayoutBuffer {
  std::string name;
  Shape shape;
  int writer = 0;
};

struct Layout {
  std::vector<LayoutParam> params;  // whole-arena order: layer descending, declaration order
  std::vector<LayoutBuffer> buffers;
  int64_t arena_size = 0;
  std::string model_spec;   // the parts' specs joined in layer order
  std::string input_shape;  // the model's (the part holding layer 0's)
  std::string optimizer;
  std::vector<std::string> slots;
  uint32_t params_crc = 0;  // CRC-32 of the whole arena's bytes, from the writers' runs
};

// The plan, or Error(kInvalidArgument) naming the first problem: layer ranges that leave a gap
// or overlap, ranks with the same layers but different specs, a parameter whose slices leave a
// gap or overlap along its split axis (naming the parameter, the elements and the ranks), held
// whole by one rank and sliced by another, with different full shapes or layers on two ranks,
// buffers of one name with two shapes, or ranks with different optimizers.
Status PlanLayout(const std::vector<PartSummary>& parts, Layout* out);

// The runs of a slice [begin, begin + extent) along `axis` of a parameter of `full_shape` (the
// whole parameter when axis < 0), as offsets and sizes in the whole parameter's elements, in
// order; the slice's held elements are the runs' elements in order.
std::vector<ArenaSlice> SliceRuns(const Shape& full_shape, int axis, int64_t begin, int64_t extent);

// The held slice as a slab of the parameter's dataset (shaped full_shape).
io::Hdf5Slab ParamSlab(const Shape& full_shape, int axis, int64_t begin, int64_t extent);

// The held slice as a slab of a flat optimizer slot, the whole parameter starting at `offset`.
io::Hdf5Slab SlotSlab(const Shape& full_shape, int axis, int64_t begin, int64_t extent,
                      int64_t offset);

}  // namespace shardflow::checkpoint_layout
