// Element: the unit that flows through an input pipeline.
//
// An element is a small set of named tensors ("image", "label", ...) plus where it came from:
// `id` is the element's index in the global, unsharded record order of the dataset (unique
// within one epoch across all ranks; exactly-once tests collect ids), and `where` names the
// file and record index inside that file, which every stage uses to put context on errors.
// A batch produced by batch() carries the id and provenance of its first element.
//
// Tensors inside an element share storage on copy (see core/tensor.hpp), so copying an Element
// is cheap; stages that must not alias (cache, shuffle state) Clone().
// Thread-safety: none; an element is owned by one stage at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace shardflow::pipeline {

// Where an element came from. `file` is shared between all elements of one file.
struct Provenance {
  std::shared_ptr<const std::string> file;  // null for in-memory sources
  int64_t file_index = -1;                  // index of the file in the dataset's file list
  int64_t record = -1;                      // record index inside the file (0-based)
  uint64_t offset = 0;                      // byte offset of the record, when known

  // ErrorContext with file and record filled in (what errors need).
  ErrorContext Context() const;
  std::string FileName() const { return file ? *file : std::string(); }
};

struct Element {
  std::vector<std::pair<std::string, Tensor>> features;  // small, in insertion order
  int64_t id = -1;
  Provenance where;

  bool Has(const std::string& name) const;
  // Throws Error(kNotFound) naming the feature and the element's provenance.
  const Tensor& Get(const std::string& name) const;
  Tensor& Get(const std::string& name);
  // Replaces the feature if present, else appends it.
  void Set(const std::string& name, Tensor tensor);
  // Sum of the tensors' byte sizes (what memory bounds count).
  size_t ByteSize() const;
};

}  // namespace shardflow::pipeline
