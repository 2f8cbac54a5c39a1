#include "io/pipeline/parallel_map.hpp"

#include <algorithm>

#include "core/trace.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {

ParallelMapIterator::ParallelMapIterator(const IteratorContext& ctx,
                                         std::unique_ptr<Iterator> input, MapFn fn,
                                         const ParallelConfig& config)
    : stats_(ctx.stats->Add(config.stage_name)),
      fn_(std::move(fn)),
      config_(config),
      input_(std::move(input)),
      active_workers_(std::clamp(config.initial_workers, 1, std::max(1, config.max_workers))),
      capacity_(std::max<int64_t>(1, config.capacity)) {
  config_.max_workers = std::max(1, config_.max_workers);
  map_ctx_.epoch = ctx.epoch;
  stats_->parallelism.store(active_workers_);
}

ParallelMapIterator::~ParallelMapIterator() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_space_.NotifyAll();
  for (auto& t : workers_) t.join();
  stats_->AddBuffered(-static_cast<int64_t>(ready_.size()), -ready_bytes_);
}

void ParallelMapIterator::StartLocked() {
  if (started_) return;
  started_ = true;
  for (int i = 0; i < config_.max_workers; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

void ParallelMapIterator::WorkerLoop(int index) {
  // Each round a worker reserves up to `micro` buffer slots, pulls that many consecutive
  // elements under one input lock, maps them, and publishes them under one buffer lock. For
  // small elements this divides the lock and wake-up traffic (the dominant cost when the map
  // itself takes microseconds) by `micro`; sequence numbers stay consecutive per round, so the
  // deterministic order is unchanged. `micro` is capacity / (2 * workers), so every worker can
  // hold a round in flight while the consumer drains the other half.
  std::vector<std::pair<int64_t, Result>> round;
  if (TracingEnabled()) SetTraceThreadName("input " + config_.stage_name);  // else no buffer
  while (true) {
    int64_t reserved = 0;
    {
      MutexLock lock(mu_);
      while (!(stop_ || input_done_ ||
               (!paused_ && index < active_workers_ &&
                in_flight_ + static_cast<int64_t>(ready_.size()) < capacity_ &&
                (ready_bytes_ < config_.max_bytes || ready_.empty())))) {
        cv_space_.Wait(mu_);
      }
      if (stop_ || input_done_) return;
      const int64_t room = capacity_ - in_flight_ - static_cast<int64_t>(ready_.size());
      const int64_t micro = std::max<int64_t>(1, capacity_ / (2 * int64_t{active_workers_}));
      reserved = std::clamp<int64_t>(room, 1, micro);
      in_flight_ += reserved;
    }
    PullRound(reserved, &round);
    if (fn_) {
      const NamedTraceScope span(config_.stage_name);
      const int64_t start = NowNs();
      for (auto& [seq, r] : round) {
        if (r.end || r.error) continue;
        try {
          try {
            fn_(r.element, map_ctx_);
          } catch (...) {
            RethrowInStage(config_.stage_name, &r.element.where);
          }
        } catch (...) {
          r.error = std::current_exception();
        }
      }
      stats_->busy_ns.fetch_add(NowNs() - start, std::memory_order_relaxed);
    }
    bool terminal = round.empty();  // empty: another worker saw the end first
    {
      MutexLock lock(mu_);
      for (auto& [seq, r] : round) {
        r.bytes = static_cast<int64_t>(r.element.ByteSize());
        terminal = terminal || r.end || r.error;
        ready_bytes_ += r.bytes;
        stats_->AddBuffered(1, r.bytes);
        ready_.emplace(seq, std::move(r));
      }
      in_flight_ -= reserved;
      if (terminal) input_done_ = true;
    }
    cv_ready_.NotifyAll();
    if (terminal) cv_space_.NotifyAll();
  }
}

void ParallelMapIterator::PullRound(int64_t reserved,
                                    std::vector<std::pair<int64_t, Result>>* round) {
  round->clear();
  MutexLock input_lock(input_mu_);
  const NamedTraceScope span(config_.stage_name, " pull");  // the stages before this one
  const int64_t start = NowNs();
  for (int64_t k = 0; k < reserved && !input_ended_; ++k) {
    Result r;
    const int64_t seq = next_in_++;
    try {
      if (!input_->Next(&r.element)) {
        r.end = true;
        input_ended_ = true;
      }
    } catch (...) {
      r.error = std::current_exception();
      input_ended_ = true;
    }
    round->emplace_back(seq, std::move(r));
  }
  stats_->input_wait_ns.fetch_add(NowNs() - start, std::memory_order_relaxed);
}

ParallelMapIterator::Poll ParallelMapIterator::TakeLocked(Element* out) {
  if (error_) std::rethrow_exception(error_);
  if (finished_) return Poll::kEnd;
  auto it = ready_.end();
  if (config_.deterministic) {
    it = ready_.find(next_out_);
  } else {
    // The lowest ready data element; an error at once; the end only when nothing is left.
    auto terminal = ready_.end();
    for (auto i = ready_.begin(); i != ready_.end(); ++i) {
      if (i->second.error) {
        it = i;
        break;
      }
      if (i->second.end) {
        if (terminal == ready_.end()) terminal = i;
        continue;
      }
      if (it == ready_.end()) it = i;
    }
    if (it == ready_.end() && terminal != ready_.end() && in_flight_ == 0 && ready_.size() == 1) {
      it = terminal;
    }
  }
  if (it == ready_.end()) return Poll::kNotReady;
  Result r = std::move(it->second);
  ready_.erase(it);
  ++next_out_;
  ready_bytes_ -= r.bytes;
  stats_->AddBuffered(-1, -r.bytes);
  cv_space_.NotifyAll();
  if (r.error) {
    error_ = r.error;
    std::rethrow_exception(error_);
  }
  if (r.end) {
    finished_ = true;
    return Poll::kEnd;
  }
  stats_->elements.fetch_add(1, std::memory_order_relaxed);
  stats_->bytes.fetch_add(r.bytes, std::memory_order_relaxed);
  *out = std::move(r.element);
  return Poll::kReady;
}

bool ParallelMapIterator::Next(Element* out) {
  MutexLock lock(mu_);
  StartLocked();
  while (true) {
    const Poll p = TakeLocked(out);
    if (p != Poll::kNotReady) return p == Poll::kReady;
    const int64_t start = NowNs();
    stats_->output_wait_since_ns.store(start, std::memory_order_relaxed);
    cv_ready_.Wait(mu_);
    stats_->output_wait_since_ns.store(0, std::memory_order_relaxed);
    stats_->output_wait_ns.fetch_add(NowNs() - start, std::memory_order_relaxed);
  }
}

bool ParallelMapIterator::Peek(Element* out) {
  if (!config_.deterministic) return false;
  MutexLock lock(mu_);
  // Before the first Next nothing has been read (and Restore may still come): not started.
  if (!started_ || error_ || finished_) return false;
  const auto it = ready_.find(next_out_);
  if (it == ready_.end() || it->second.error || it->second.end) return false;
  *out = it->second.element;
  return true;
}

ParallelMapIterator::Poll ParallelMapIterator::TryNext(Element* out) {
  MutexLock lock(mu_);
  StartLocked();
  return TakeLocked(out);
}

void ParallelMapIterator::Save(StateWriter* w) {
  MutexLock lock(mu_);
  paused_ = true;
  while (in_flight_ != 0) cv_ready_.Wait(mu_);
  // Workers are parked (paused or exited): the input and the buffer are quiescent. input_mu_
  // is free then and taking it costs nothing; it makes the input's state visibly ours.
  MutexLock input_lock(input_mu_);
  struct Unpause {
    ParallelMapIterator* self;
    // Runs before `lock` is released (declared after it), so mu_ is held; the analysis
    // cannot follow a lock into a local class's destructor.
    ~Unpause() NO_THREAD_SAFETY_ANALYSIS {
      self->paused_ = false;
      self->cv_space_.NotifyAll();
    }
  } unpause{this};
  bool failed = error_ != nullptr;
  for (const auto& [seq, r] : ready_) failed = failed || r.error;
  if (failed) {
    throw Error(ErrorCode::kInvalidArgument,
                "stage '" + config_.stage_name + "': cannot save the state of a failed iterator");
  }
  w->WriteTag("parallel:" + config_.stage_name);
  w->WriteI64(next_in_);
  w->WriteI64(next_out_);
  w->WriteBool(input_ended_);
  w->WriteBool(finished_);
  w->WriteU64(ready_.size());
  for (const auto& [seq, r] : ready_) {
    w->WriteI64(seq);
    w->WriteBool(r.end);
    w->WriteElement(r.element);
  }
  input_->Save(w);
}

void ParallelMapIterator::Restore(StateReader* r) {
  MutexLock lock(mu_);
  MutexLock input_lock(input_mu_);
  if (started_) {
    throw Error(ErrorCode::kInternal,
                "stage '" + config_.stage_name + "': Restore() after Next() is not supported");
  }
  r->ExpectTag("parallel:" + config_.stage_name);
  next_in_ = r->ReadI64();
  next_out_ = r->ReadI64();
  input_ended_ = r->ReadBool();
  finished_ = r->ReadBool();
  stats_->AddBuffered(-static_cast<int64_t>(ready_.size()), -ready_bytes_);
  ready_.clear();
  ready_bytes_ = 0;
  const uint64_t n = r->ReadU64();
  for (uint64_t i = 0; i < n; ++i) {
    const int64_t seq = r->ReadI64();
    Result res;
    res.end = r->ReadBool();
    res.element = r->ReadElement();
    res.bytes = static_cast<int64_t>(res.element.ByteSize());
    ready_bytes_ += res.bytes;
    stats_->AddBuffered(1, res.bytes);
    ready_.emplace(seq, std::move(res));
  }
  input_done_ = input_ended_;
  input_->Restore(r);
}

void ParallelMapIterator::SetParallelism(int workers) {
  {
    MutexLock lock(mu_);
    active_workers_ = std::clamp(workers, 1, config_.max_workers);
    stats_->parallelism.store(active_workers_);
  }
  cv_space_.NotifyAll();
}

void ParallelMapIterator::SetCapacity(int64_t elements) {
  {
    MutexLock lock(mu_);
    capacity_ = std::max<int64_t>(1, elements);
  }
  cv_space_.NotifyAll();
}

int ParallelMapIterator::parallelism() const {
  MutexLock lock(mu_);
  return active_workers_;
}

int64_t ParallelMapIterator::capacity() const {
  MutexLock lock(mu_);
  return capacity_;
}

}  // namespace shardflow::pipeline
