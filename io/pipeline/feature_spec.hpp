// Feature specs from [data] text, and the decode step that turns records into typed features.
//
// Text form (one string per feature; `features = a, b` in the config):
//   name:kind:dtype:shape[:default]    tf.train.Example features (format tfrecord)
//   name:dtype:shape                   tensor formats (hdf5, idx, csv): kind left out
// kind: bytes | int64 | float | image. dtype: uint8 | int32 | int64 | float32 | float64.
// shape: dimensions joined by 'x' ("28x28x1"), "1", or "scalar" / "" for a scalar (shape []).
// default: one number broadcast to every value when the feature is missing (fixed-length only).
//   ParseFeatureSpec("image_raw:bytes:uint8:28x28x1")  // uint8 [28,28,1] from 784 bytes
//   ParseFeatureSpec("label:int64:int64:scalar:0")      // int64 [], 0 when missing
// kind image: a bytes feature holding one encoded JPEG or PNG, decoded to uint8 [H, W, C]
// (shape must be HxWxC; C 1 or 3); e.g. image_raw:image:uint8:28x28x1.
// A bytes feature of any length, name:bytes:uint8:* (a document to tokenize, text_input.hpp), is
// one value kept as its bytes, uint8 [n]; it cannot be batched until tokenized.
// A short form "label:int64:1" (kind and dtype alike) is accepted for numeric kinds: the dtype
// is the kind's natural type (int64 -> int64, float -> float32).
// Errors: Error(kInvalidArgument) naming the key `features` and the offending text.
//
// After batching, a feature of per-example shape S becomes a tensor [B, S...]: "label" with
// shape "scalar" is int64 [B]; with shape "1" it is int64 [B,1].
#pragma once

#include <string>
#include <vector>

#include "io/pipeline/nodes.hpp"
#include "io/schema.hpp"

namespace shardflow::pipeline {

// One spec. `key` names the config key in errors (e.g. "features" or "eval.features").
io::FeatureSpec ParseFeatureSpec(const std::string& text, const std::string& key = "features");
io::Schema ParseFeatureSpecs(const std::vector<std::string>& texts,
                             const std::string& key = "features");
// True for a name:bytes:uint8:* spec.
bool IsAnyLengthBytes(const io::FeatureSpec& spec);
// Names of the specs of kind image.
std::vector<std::string> ImageFeatureNames(const std::vector<std::string>& texts);
// Names of the specs of kind float (checked for NaN/Inf by the TFRecord source when
// data.check_finite is on).
std::vector<std::string> FloatFeatureNames(const std::vector<std::string>& texts);

// Decode step for Example records: reads the uint8 feature `record_feature` (one serialized
// tf.train.Example, as the TFRecord source yields it), parses it by `schema` with an
// io::ExampleBatchParser (one per worker thread, reused) and replaces the element's features
// with one tensor per schema feature, named by it, of its per-example shape. `header_bytes`
// is added to the element's offset for error messages (12 for TFRecord: the Example starts
// after the length header). Errors name the feature, file, record and offset. Thread-safe.
// REQUIRES: every spec is fixed-length (Error(kInvalidArgument) otherwise).
// Features named in `image_features` are decoded as images (JPEG/PNG) to the spec's shape; a
// decoded image of another shape is Error(kInvalidArgument) naming the feature and record.
// Image features named in `encoded_jpeg` whose bytes are a JPEG stay encoded (uint8 [n]) once
// the header's size matches the spec (no pixel is decoded): the decode is fused into a crop op
// (data_options.hpp FusesDecodeAndCrop, ops/resized_crop.hpp). PNGs are decoded as above.
MapFn MakeExampleDecoder(io::Schema schema, std::vector<std::string> image_features = {},
                         std::string record_feature = "record", uint64_t header_bytes = 12,
                         std::vector<std::string> encoded_jpeg = {});

// Decode step for tensor formats: keeps the features named in `schema` (in its order), checks
// each dtype and reshapes to the spec's shape when the element count matches (e.g. HDF5 images
// [28,28] -> [28,28,1]); a missing feature, another dtype or another element count is an
// Error(kInvalidArgument) naming the feature, file and record.
MapFn MakeTensorSelector(io::Schema schema);

}  // namespace shardflow::pipeline
