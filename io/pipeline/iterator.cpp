#include "io/pipeline/iterator.hpp"

#include <algorithm>

#include "core/hash.hpp"

namespace shardflow::pipeline {

bool SequentialIterator::Next(Element* out) {
  if (error_) std::rethrow_exception(error_);  // a failed stage keeps failing
  const bool every = last_call_ns_ >= 10'000 || calls_ < kSamplePeriod;
  weight_ = every ? 1 : (calls_ % kSamplePeriod == 0 ? kSamplePeriod : 0);
  ++calls_;
  const int64_t start = weight_ ? NowNs() : 0;
  wait_ns_ = pulls_ = 0;
  bool got = false;
  auto charge = [&] {
    if (weight_ == 0) return;
    last_call_ns_ = NowNs() - start;
    stats_->busy_ns.fetch_add(std::max<int64_t>(last_call_ns_ - wait_ns_, 0) * weight_,
                              std::memory_order_relaxed);
    stats_->input_wait_ns.fetch_add(wait_ns_ * weight_, std::memory_order_relaxed);
  };
  try {
    got = NextImpl(out);
  } catch (...) {
    error_ = std::current_exception();
    charge();
    Flush();
    throw;
  }
  charge();
  if (got) {
    ++pending_elements_;
    pending_bytes_ += static_cast<int64_t>(out->ByteSize());
  }
  if (!got || weight_ != 0 || pending_elements_ >= kSamplePeriod) Flush();
  return got;
}

bool SequentialIterator::Pull(Iterator* input, Element* out) {
  // In a timed call, the first kSamplePeriod pulls are timed, then one in kSamplePeriod, each
  // standing for kSamplePeriod (a batch of 1024 pulls 1024 times per call).
  const int64_t pull = pulls_++;
  const int64_t weight = pull < kSamplePeriod ? 1 : (pull % kSamplePeriod == 0 ? kSamplePeriod : 0);
  if (weight_ == 0 || weight == 0) return input->Next(out);
  const int64_t start = NowNs();
  const bool got = input->Next(out);
  wait_ns_ += (NowNs() - start) * weight;
  return got;
}

void SequentialIterator::Flush() {
  if (pending_elements_ == 0 && pending_bytes_ == 0) return;
  stats_->elements.fetch_add(pending_elements_, std::memory_order_relaxed);
  stats_->bytes.fetch_add(pending_bytes_, std::memory_order_relaxed);
  pending_elements_ = pending_bytes_ = 0;
}

uint64_t HashString(const std::string& text) {
  // The offset basis lost its last digit when this was first written; description hashes sit
  // in saved iterator states (checkpoints), so it stays.
  return Fnv1a64(text, 1469598103934665603ull);
}

}  // namespace shardflow::pipeline
