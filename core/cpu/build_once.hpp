// BuildOnce: a map from a key to an immutable value built the first time the key is asked for,
// for library objects that are costly to make and reused by shape (oneDNN's primitives:
// core/cpu/onednn_conv.cpp, core/precision/bf16/cpu_bf16_gemm.cpp).
// Thread-safety: Get from any threads; a value is built under the lock, once.
#pragma once

#include <map>
#include <memory>

#include "core/thread_annotations.hpp"

namespace shardflow::cpu {

template <typename Key, typename T>
class BuildOnce {
 public:
  // The value for `key`, built by build() (returning std::shared_ptr<T>, which may be null: a
  // key that has none is remembered as such) the first time. When build throws, nothing is
  // kept and the exception passes on.
  template <typename Build>
  std::shared_ptr<const T> Get(const Key& key, const Build& build) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    auto it = items_.find(key);
    if (it != items_.end()) return it->second;
    std::shared_ptr<const T> item = build();
    items_.emplace(key, item);
    return item;
  }

 private:
  Mutex mu_;
  std::map<Key, std::shared_ptr<const T> > items_ GUARDED_BY(mu_);
};

}  // namespace shardflow::cpu
