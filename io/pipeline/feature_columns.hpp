// Feature columns of sparse models, with tf.feature_column's semantics: the id-valued entries
// of data.assemble (io/pipeline/assemble.hpp) and bucketized numbers.
//
//   name:hash=B               categorical_column_with_hash_bucket: one slot, the value's bucket
//                             FNV-1a64(value) mod B (strings by their bytes, integers by their
//                             decimal text; TensorFlow uses FarmHash, so the buckets differ)
//   name:id=B                 categorical_column_with_identity: one slot, an integer in [0, B)
//                             (anything else is an error naming the value and record)
//   a*b[*c...]:hash=B         crossed_column: one slot, the bucket of the values joined by the
//                             byte 0x1f; each crossed feature a single string or integer
//   name:ids=L:hash=B|id=B[:truncate][:sep=C]
//                             a multi-valued list (a string split at C, default '|', or an int64
//                             list of any length): L slots, its ids then -1s. A list longer than
//                             L is an error naming the record, or with :truncate keeps its first
//                             L ids (as a fixed max_len does)
//   x:bucket=b1|b2|...        bucketized_column: one-hot over the len+1 ranges (-inf, b1),
//                             [b1, b2), ..., [bn, inf); boundaries strictly ascending
// Missing values take no id (slot -1, as TensorFlow drops '' and -1 from sparse input): an empty
// string, an empty list element, the integer -1; a cross with a missing part is missing.
// Id entries share one id space: entry k's ids lie in [offset_k, offset_k + B_k), offsets in
// assemble order, so one embedbag table of sum(B) rows serves every column (as TorchRec fuses
// tables); the layout names each range. Thread-safety: the functions are pure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/pipeline/element.hpp"

namespace shardflow::pipeline {

struct IdColumn {
  std::vector<std::string> columns;  // the feature, or the crossed features
  bool hashed = true;                // hash=B; false: id=B
  int64_t buckets = 0;               // B
  int64_t list = 0;                  // 0: one value, one slot; L: a list, L slots
  bool truncate = false;
  char separator = '|';
  int64_t offset = 0;  // the first id of this entry in the shared id space
  int64_t width() const { return list > 0 ? list : 1; }
};

// True when `kind` (an assemble entry's text after "name:") is an id column's.
bool IsIdColumnKind(const std::string& kind);
// Parses "a*b" and "hash=B", "id=B", "ids=L:hash=B:truncate:sep=;"; throws
// Error(kInvalidArgument) naming `key` and the entry.
IdColumn ParseIdColumn(const std::string& name, const std::string& kind, const std::string& key,
                       const std::string& entry);
// Writes the column's width() slots of `e` into out (ids offset, -1 where none). Throws
// Error(kInvalidArgument) naming the feature and the record for a missing feature, a wrong
// dtype, an id out of range or a list too long.
void WriteIds(const IdColumn& c, const Element& e, float* out);
// "ids [0, 1000) hash" / "ids [1000, 1100) identity, lists of 8 (truncate)".
std::string IdColumnDetail(const IdColumn& c);

// Parses "b1|b2|..." (numbers, strictly ascending); throws like ParseIdColumn.
std::vector<double> ParseBoundaries(const std::string& text, const std::string& key,
                                    const std::string& entry);
// The bucket of v: the number of boundaries <= v (0..n).
int64_t BucketIndex(const std::vector<double>& boundaries, double v);

}  // namespace shardflow::pipeline
