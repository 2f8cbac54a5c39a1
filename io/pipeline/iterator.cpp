#include "io/pipeline/iterator.hpp"

namespace shardflow::pipeline {

bool SequentialIterator::Next(Element* out) {
  if (error_) std::rethrow_exception(error_);  // a failed stage keeps failing
  const int64_t start = NowNs();
  const int64_t wait_before = wait_ns_;
  bool got = false;
  try {
    got = NextImpl(out);
  } catch (...) {
    error_ = std::current_exception();
    stats_->busy_ns.fetch_add(NowNs() - start - (wait_ns_ - wait_before),
                              std::memory_order_relaxed);
    throw;
  }
  stats_->busy_ns.fetch_add(NowNs() - start - (wait_ns_ - wait_before), std::memory_order_relaxed);
  if (got) {
    stats_->elements.fetch_add(1, std::memory_order_relaxed);
    stats_->bytes.fetch_add(static_cast<int64_t>(out->ByteSize()), std::memory_order_relaxed);
  }
  return got;
}

bool SequentialIterator::Pull(Iterator* input, Element* out) {
  const int64_t start = NowNs();
  bool got = input->Next(out);
  const int64_t waited = NowNs() - start;
  wait_ns_ += waited;
  stats_->input_wait_ns.fetch_add(waited, std::memory_order_relaxed);
  return got;
}

uint64_t HashString(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace shardflow::pipeline
