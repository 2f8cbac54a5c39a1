// PoisonCheckpoint: turns one value of a parameter in a checkpoint file into NaN or Inf the way
// a build without the finite check would have written it: the dataset is rewritten through
// HDF5 (so its Fletcher-32 chunk checksums are recomputed) and the file's params_crc32 and the
// parameter's crc32 are updated, so the only thing wrong with the file is the non-finite value.
// Tests only.
// Thread-safety: none (HDF5 calls on one file).
#pragma once

#include <hdf5.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "core/arena.hpp"
#include "io/checkpoint/slices.hpp"

namespace shardflow::testing {

// `model` is the model the file was saved from (its arena gives the layout); the value at
// `element` of parameter `param` becomes `value`.
inline void PoisonCheckpoint(const std::string& path, const Arena<float>& arena, int param,
                             int64_t element, float value) {
  const ParamSpec& spec = arena.spec(param);
  std::vector<float> all(arena.params(), arena.params() + arena.size());
  all[static_cast<size_t>(spec.offset + element)] = value;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) throw std::runtime_error("PoisonCheckpoint: cannot open " + path);
  const std::string name = "/params/" + spec.FullName();
  const hid_t d = H5Dopen2(file, name.c_str(), H5P_DEFAULT);
  const herr_t wrote =
      H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, all.data() + spec.offset);
  const int64_t param_crc =
      Crc32(all.data() + spec.offset, static_cast<size_t>(spec.size) * sizeof(float));
  const hid_t pa = H5Aopen(d, "crc32", H5P_DEFAULT);
  const herr_t param_set = H5Awrite(pa, H5T_NATIVE_INT64, &param_crc);
  H5Aclose(pa);
  H5Dclose(d);
  const int64_t crc = Crc32(all.data(), all.size() * sizeof(float));
  const hid_t a = H5Aopen(file, "params_crc32", H5P_DEFAULT);
  const herr_t set = H5Awrite(a, H5T_NATIVE_INT64, &crc);
  H5Aclose(a);
  H5Fclose(file);
  if (d < 0 || wrote < 0 || a < 0 || set < 0 || pa < 0 || param_set < 0) {
    throw std::runtime_error("PoisonCheckpoint: cannot rewrite " + name + " in " + path);
  }
}

}  // namespace shardflow::testing
