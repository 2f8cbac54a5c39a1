// Assembler: several features of an example concatenated into one float32 vector, the model's
// input, in a stated order — numeric scalars and vectors as they are or normalised with
// whole-training-set statistics, categorical columns (strings or integers) one-hot through a
// vocabulary. The [data] keys:
//
//   assemble         = age:norm, income:norm, hours, city:onehot, zone:onehot=zones.txt
//   assemble_feature = input               (the assembled feature's name; default "input")
//   assemble_stats   = out.stats.json      (io/table_stats.hpp; shardflow-convert writes it)
//
// Entries, in output order:
//   name               numeric feature, cast to float32 (width: its element count from the
//                      feature spec when `features` names it, else 1 — CSV columns)
//   name:norm          (x - mean) / std with the column's statistics (std 0 counts as 1)
//   name:log1p         log(1 + x) of counts (x >= 0; a negative value is an error naming the
//                      record), the usual transform of click-log counts
//   name:onehot        one slot per vocabulary entry plus a last out-of-vocabulary slot; the
//                      vocabulary is the column's in assemble_stats, or
//   name:onehot=FILE   one value per line of FILE (integers written in decimal)
//   name:index[=FILE]  one slot holding the value's vocabulary index as a number, 0..V with V
//                      out of vocabulary: the input column of an embedding:V+1:D:AT layer
//                      (core/layers/embedding.hpp), AT being the slot's position
//   name:bucket=B1|B2..  one-hot over the ranges the boundaries cut (bucketized_column)
//   name:hash=B, name:id=B, a*b:hash=B, name:ids=L:hash=B|id=B[:truncate][:sep=C]
//                      id slots of sparse features (io/pipeline/feature_columns.hpp): ids in
//                      one space shared by these entries, the input of an embedbag layer
//                      (core/layers/embedding_bag.hpp) of id_space() rows
// A categorical value is looked up by its bytes (string columns, uint8[n]) or its decimal text
// (int64); an int64 feature of a column the statistics call "string" is already a vocabulary
// index (what shardflow-convert writes for string columns) and is used as it is.
// The assembled feature replaces the features it consumed (so string columns of varying length
// never reach batching). Layout() says which slice is which column; LayoutText() is the one-line
// form the apps log and write into summary.json.
// Errors: Error(kInvalidArgument) naming "<section>.assemble" for a bad entry, a statistic or
// vocabulary that is missing; while reading, a missing feature or a wrong width names the
// feature, file and record. Thread-safety: Apply is const and reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config.hpp"
#include "io/pipeline/element.hpp"
#include "io/pipeline/feature_columns.hpp"
#include "io/pipeline/nodes.hpp"

namespace shardflow::io {
struct TableStats;
}  // namespace shardflow::io

namespace shardflow::pipeline {

struct AssembleConfig {
  std::vector<std::string> inputs;
  std::string feature = "input";
  std::string stats;
};

void RegisterAssembleOptions(ConfigSchema& schema, const std::string& section,
                             AssembleConfig* config);

struct AssembleSlice {
  std::string column;
  std::string
      kind;  // raw | norm | log1p | onehot | index | bucket | hash | identity | cross | list
  int64_t begin = 0, width = 0;
  std::string detail;  // "mean=.. std=.." / "vocabulary 12 + oov"
};

class Assembler {
 public:
  // `features`: the input's feature specs (widths of numeric vectors); may be empty.
  Assembler(const AssembleConfig& config, const std::vector<std::string>& features,
            const std::string& section);

  void Apply(Element& e) const;
  MapFn AsMapFn(std::shared_ptr<const Assembler> self) const;

  int64_t width() const { return width_; }
  // The id entries' buckets added up: the rows of an embedbag table over every id slot.
  int64_t id_space() const { return id_space_; }
  const std::string& feature() const { return feature_; }
  const std::vector<AssembleSlice>& Layout() const { return layout_; }
  // "input float32[7] = [0:1) age norm(mean=38.2 std=12.1), [1:6) city onehot(4 + oov), ..."
  std::string LayoutText() const;

 private:
  struct Entry {
    AssembleSlice slice;
    std::optional<IdColumn> ids;                          // hash | identity | cross | list
    std::vector<double> boundaries;                       // bucket
    double mean = 0, scale = 1;                           // norm
    std::unordered_map<std::string, int64_t> vocabulary;  // onehot
    bool value_is_index = false;                          // int64 index of a string column
  };
  using StatsFn = std::function<const io::TableStats&(const std::string& entry)>;
  Entry ParseEntry(const std::string& entry, const std::string& stats_path,
                   const std::map<std::string, int64_t>& widths, const StatsFn& need_stats,
                   const std::string& key) const;

  std::vector<Entry> entries_;
  std::vector<std::string> consumed_;  // the features the entries read (crosses: each part)
  int64_t id_space_ = 0;
  std::vector<AssembleSlice> layout_;
  std::string feature_;
  int64_t width_ = 0;
};

// The assembler of `config`, or null when it lists no inputs.
std::shared_ptr<const Assembler> MakeAssembler(const AssembleConfig& config,
                                               const std::vector<std::string>& features,
                                               const std::string& section);

}  // namespace shardflow::pipeline
