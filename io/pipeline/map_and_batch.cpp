// map_and_batch: map fused with batch. A worker claims a run of consecutive elements of one
// batch (pulled and numbered under the input lock: element k is the k-th pull; runs of
// B / workers elements, never crossing a batch), runs fn on each and copies the result straight
// into row k % B of batch k / B's buffer — no per-element queue, no second copy by a batch
// stage, and one lock + wake-up per run instead of per element. The consumer takes whole
// batches in order, so the output is identical to map(...).batch(B) for any worker count.
// Bounds: at most `max_batches` batches are open at once (workers wait beyond that).
// Errors: a failing element's error is stored on its batch with its position, the lowest
// position winning; the consumer rethrows it when it reaches that batch and no run is in flight
// (no new run starts after an error), so the error reported is the first element's in input
// order whatever the worker timing, as map(...).batch(B) would report it. State save/restore pauses
// the workers until none is in flight; then every pulled element is in its batch, so open batches
// are saved as their filled prefix. Corrupt elements (MapOptions::on_data_loss): a row whose fn
// failed with kDataLoss counts as filled and is remembered as dropped; the consumer moves the
// rows after it up when it hands the batch out (BatchBuffer::FinishWithout), so the output is
// the same for any worker count and every pass yields as many batches as without the drop.
// Locks: input_mu_ (input pulls) is taken before mu_ (batches and control state) where both
// are held.
#include <algorithm>
#include <map>
#include <optional>
#include <thread>

#include "core/thread_annotations.hpp"
#include "core/trace.hpp"
#include "io/pipeline/batch_buffer.hpp"
#include "io/pipeline/nodes.hpp"
#include "io/pipeline/stage_error.hpp"

namespace shardflow::pipeline {
namespace {

class MapAndBatchNode : public DatasetNode {
 public:
  MapAndBatchNode(NodePtr input, MapFn fn, int64_t size, bool drop, MapOptions options)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        size_(size),
        drop_(drop),
        options_(std::move(options)) {}
  std::unique_ptr<Iterator> MakeIterator(const IteratorContext& ctx) const override;
  std::string Describe() const override {
    return "batch(" + std::to_string(size_) + (drop_ ? ",drop" : "") + ")<-map(" + options_.name +
           (options_.on_data_loss ? ",skip_corrupt" : "") + ")<-" + input_->Describe();
  }
  int64_t Cardinality() const override {
    const int64_t n = input_->Cardinality();
    if (n < 0) return n;
    return drop_ ? n / size_ : (n + size_ - 1) / size_;
  }
  NodePtr input_;
  MapFn fn_;
  int64_t size_;
  bool drop_;
  MapOptions options_;
};

class MapAndBatchIterator : public Iterator {
 public:
  MapAndBatchIterator(const IteratorContext& ctx, const MapAndBatchNode* node)
      : node_(node),
        stats_(ctx.stats->Add(node->options_.name + "+batch")),
        input_(node->input_->MakeIterator(ctx)) {
    map_ctx_.epoch = ctx.epoch;
    workers_wanted_ = std::max(1, node->options_.num_parallel_calls);
    // Enough open batches to keep every worker busy while the consumer holds one.
    max_batches_ = 2 + (workers_wanted_ + node->size_ - 1) / node->size_;
    // Runs of size/workers keep every worker busy on a batch while hand-offs stay per run.
    run_length_ = std::max<int64_t>(1, node->size_ / workers_wanted_);
    stats_->parallelism.store(workers_wanted_);
  }
  ~MapAndBatchIterator() override {
    {
      MutexLock lock(mu_);
      stop_ = true;
    }
    cv_space_.NotifyAll();
    for (auto& t : workers_) t.join();
  }

  bool Next(Element* out) override {
    MutexLock lock(mu_);
    if (!started_) {
      started_ = true;
      for (int i = 0; i < workers_wanted_; ++i) workers_.emplace_back([this] { Work(); });
    }
    while (true) {
      if (error_) std::rethrow_exception(error_);
      const int64_t b = next_batch_;
      const int64_t first = b * node_->size_;
      if (end_seq_ >= 0 && first >= end_seq_) return false;
      auto it = open_.find(b);
      if (it != open_.end() && it->second.error && in_flight_ == 0) {
        error_ = it->second.error;
        std::rethrow_exception(error_);
      }
      const int64_t rows = end_seq_ >= 0 ? std::min(node_->size_, end_seq_ - first) : node_->size_;
      if (it != open_.end() && it->second.filled == rows) {
        if (node_->drop_ && rows < node_->size_) {
          end_seq_ = first;
          open_.erase(it);
          return false;
        }
        Open& open = it->second;
        if (static_cast<int64_t>(open.dropped.size()) == rows) {
          error_ = std::make_exception_ptr(EveryRowDropped(b, rows));
          std::rethrow_exception(error_);
        }
        std::sort(open.dropped.begin(), open.dropped.end());
        *out = open.buffer.FinishWithout(rows, open.dropped);
        if (open.lead) {
          out->id = open.lead->id;
          out->where = open.lead->where;
        }
        open_.erase(it);
        ++next_batch_;
        cv_space_.NotifyAll();
        stats_->elements.fetch_add(1, std::memory_order_relaxed);
        stats_->bytes.fetch_add(static_cast<int64_t>(out->ByteSize()), std::memory_order_relaxed);
        return true;
      }
      const int64_t start = NowNs();
      cv_ready_.Wait(mu_);
      stats_->output_wait_ns.fetch_add(NowNs() - start, std::memory_order_relaxed);
    }
  }

  void Save(StateWriter* w) override {
    {
      MutexLock lock(mu_);
      paused_ = true;
      while (in_flight_ != 0) cv_ready_.Wait(mu_);
    }
    // Paused with nothing in flight: no worker holds input_mu_ or can claim a run until the
    // pause ends, so both locks are free; they are taken in the workers' order.
    MutexLock input_lock(input_mu_);
    MutexLock lock(mu_);
    struct Unpause {
      MapAndBatchIterator* self;
      // Runs before `lock` is released (declared after it), so mu_ is held; the analysis
      // cannot follow a lock into a local class's destructor.
      ~Unpause() NO_THREAD_SAFETY_ANALYSIS {
        self->paused_ = false;
        self->cv_space_.NotifyAll();
      }
    } unpause{this};
    bool failed = error_ != nullptr;
    for (const auto& [b, open] : open_) failed = failed || open.error;
    if (failed) {
      throw Error(ErrorCode::kInvalidArgument,
                  "stage '" + node_->options_.name + "+batch': cannot save a failed iterator");
    }
    w->WriteTag("map_and_batch");
    w->WriteI64(next_in_);
    w->WriteI64(next_batch_);
    w->WriteI64(end_seq_);
    w->WriteU64(open_.size());
    for (const auto& [b, open] : open_) {
      w->WriteI64(b);
      w->WriteI64(open.filled);
      w->WriteElement(open.buffer.allocated() ? open.buffer.Finish(open.filled) : Element());
      if (node_->options_.on_data_loss) {  // (the tag's pipeline description says so)
        w->WriteU64(open.dropped.size());
        for (const int64_t row : open.dropped) w->WriteI64(row);
        w->WriteBool(open.lead.has_value());
        if (open.lead) w->WriteElement(*open.lead);
      }
    }
    input_->Save(w);
  }
  void Restore(StateReader* r) override {
    MutexLock input_lock(input_mu_);
    MutexLock lock(mu_);
    if (started_) {
      throw Error(ErrorCode::kInternal, "map_and_batch: Restore() after Next() is not supported");
    }
    r->ExpectTag("map_and_batch");
    next_in_ = r->ReadI64();
    next_batch_ = r->ReadI64();
    end_seq_ = r->ReadI64();
    open_.clear();
    const uint64_t n = r->ReadU64();
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t b = r->ReadI64();
      Open& open = open_[b];
      open.filled = r->ReadI64();
      const Element partial = r->ReadElement();
      if (!partial.features.empty()) open.buffer.AllocateFrom(partial, node_->size_);
      if (node_->options_.on_data_loss) {
        const uint64_t dropped = r->ReadU64();
        for (uint64_t k = 0; k < dropped; ++k) open.dropped.push_back(r->ReadI64());
        if (r->ReadBool()) open.lead = r->ReadElement();
      }
    }
    input_done_ = end_seq_ >= 0;
    input_->Restore(r);
  }

 private:
  struct Open {
    BatchBuffer buffer;
    int64_t filled = 0;            // rows done: placed or dropped
    std::vector<int64_t> dropped;  // rows whose element was corrupt (on_data_loss)
    // Row 0's element when it was dropped: the batch still takes its id and provenance, as
    // it does from row 0 when that is placed (the same id for any worker timing).
    std::optional<Element> lead;
    std::exception_ptr error;
    int64_t error_at = -1;  // the failing element's sequence number
  };

  // What one worker pass pulled: run[0, pulled) are elements first, first + 1, ...
  struct Claim {
    int64_t first = -1;  // sequence number of run[0]; -1: nothing claimed
    int64_t pulled = 0;  // elements pulled
    bool end = false;    // the pull after them saw the end of the input
    std::exception_ptr error;
    int64_t error_at = -1;         // sequence number of the element (or pull) that failed
    std::vector<int64_t> dropped;  // rows of the run's batch whose element was dropped
    std::optional<Element> lead;   // row 0's element (id and provenance) when it was dropped
  };

  Error EveryRowDropped(int64_t batch, int64_t rows) const {
    return Error(ErrorCode::kDataLoss,
                 "stage '" + node_->options_.name + "+batch': every element of batch " +
                     std::to_string(batch) + " (" + std::to_string(rows) +
                     ") is corrupt and was skipped; a batch needs at least one",
                 {.hint = "a larger batch_size, or remove the corrupt files (their names are "
                          "logged above)"});
  }

  // One worker pass: claim a run of consecutive elements of one batch (numbered under the
  // input lock, so element k is still the k-th pull), map each, place it in its row, then
  // publish the run with one lock and one wake-up. Per-run rather than per-element hand-offs
  // are what make small records cheap (bench tfdata: 784-byte Examples).
  void Work() EXCLUDES(input_mu_, mu_) {
    std::vector<Element> run;  // reused between runs
    if (TracingEnabled()) SetTraceThreadName("input " + node_->options_.name + "+batch");
    while (true) {
      {
        MutexLock lock(mu_);
        while (!(stop_ || input_done_ || CanClaimLocked())) cv_space_.Wait(mu_);
        if (stop_ || input_done_) return;
        ++in_flight_;
      }
      Claim claim = PullRun(&run);
      const int64_t placed = claim.pulled > 0 ? PlaceRun(&run, &claim) : 0;
      {
        MutexLock lock(mu_);
        --in_flight_;
        if (claim.first >= 0) {
          const int64_t b = claim.first / node_->size_;
          if (placed > 0) open_[b].filled += placed;
          if (!claim.dropped.empty()) {
            Open& open = open_[b];
            open.dropped.insert(open.dropped.end(), claim.dropped.begin(), claim.dropped.end());
            if (claim.lead) open.lead = std::move(claim.lead);
          }
          if (claim.error) {
            // An input error belongs to position first + pulled, a map error to first + placed;
            // both lie in this run's batch.
            Open& open = open_[b];
            if (!open.error || claim.error_at < open.error_at) {
              open.error = claim.error;
              open.error_at = claim.error_at;
            }
            input_done_ = true;
          } else if (claim.end) {
            // Pulls are numbered in order, so the first end seen has the smallest number.
            const int64_t end_seq = claim.first + claim.pulled;
            if (end_seq_ < 0 || end_seq < end_seq_) end_seq_ = end_seq;
            input_done_ = true;
          }
        }
      }
      cv_ready_.NotifyAll();
      cv_space_.NotifyAll();
    }
  }

  // Claims the next run (re-checked under the input lock: another worker may have claimed
  // since the caller's wait) and pulls its elements into run[0, pulled).
  Claim PullRun(std::vector<Element>* run) EXCLUDES(input_mu_, mu_) {
    Claim claim;
    MutexLock input_lock(input_mu_);
    int64_t want = 0;
    {
      MutexLock lock(mu_);
      if (!stop_ && !input_done_ && CanClaimLocked()) {
        claim.first = next_in_;
        want = std::min(run_length_, node_->size_ - claim.first % node_->size_);
      }
    }
    if (claim.first < 0) return claim;
    if (run->size() < static_cast<size_t>(want)) run->resize(static_cast<size_t>(want));
    const NamedTraceScope span(node_->options_.name, "+batch pull");  // the stages before
    const int64_t start = NowNs();
    try {
      while (claim.pulled < want && !claim.end) {
        if (input_->Next(&(*run)[static_cast<size_t>(claim.pulled)])) {
          ++claim.pulled;
        } else {
          claim.end = true;
        }
      }
    } catch (...) {
      claim.error = std::current_exception();
      claim.error_at = claim.first + claim.pulled;
    }
    stats_->input_wait_ns.fetch_add(NowNs() - start, std::memory_order_relaxed);
    MutexLock lock(mu_);  // next_in_ is read by waiters under mu_
    // A pull that ended or failed takes a number too (the end or the error's position).
    next_in_ = claim.first + claim.pulled + (claim.end || claim.error ? 1 : 0);
    return claim;
  }

  // Maps run[0, pulled) and copies each into its row; returns how many were done (all, or
  // up to the first failure, whose error goes to claim->error): placed, or dropped as corrupt
  // (on_data_loss; their rows go to claim->dropped). Rows are disjoint between workers, so the
  // copies run outside the lock.
  int64_t PlaceRun(std::vector<Element>* run, Claim* claim) EXCLUDES(mu_) {
    const NamedTraceScope span(node_->options_.name, "+batch");
    const int64_t start = NowNs();
    const int64_t b = claim->first / node_->size_;
    BatchBuffer* buffer = nullptr;
    int64_t placed = 0;
    for (; placed < claim->pulled; ++placed) {
      Element& e = (*run)[static_cast<size_t>(placed)];
      try {
        try {
          node_->fn_(e, map_ctx_);
        } catch (...) {
          RethrowInStage(node_->options_.name, &e.where);
        }
      } catch (const Error& error) {
        if (error.code() != ErrorCode::kDataLoss || !node_->options_.on_data_loss) {
          claim->error = std::current_exception();
          claim->error_at = claim->first + placed;
          break;
        }
        node_->options_.on_data_loss(error);
        const int64_t row = (claim->first + placed) % node_->size_;
        claim->dropped.push_back(row);
        if (row == 0) claim->lead = Element{.id = e.id, .where = e.where};
        e = Element();
        continue;
      } catch (...) {
        claim->error = std::current_exception();
        claim->error_at = claim->first + placed;
        break;
      }
      try {
        if (buffer == nullptr) {
          MutexLock lock(mu_);
          Open& open = open_[b];
          if (!open.buffer.allocated()) open.buffer.Allocate(e, node_->size_);
          buffer = &open.buffer;  // std::map nodes are stable; erased only when complete
        }
        try {
          buffer->Place((claim->first + placed) % node_->size_, e);
        } catch (...) {
          RethrowInStage(node_->options_.name + "+batch", &e.where);
        }
      } catch (...) {
        // This element's error is its batch's; the rest of the run is in the same batch.
        claim->error = std::current_exception();
        claim->error_at = claim->first + placed;
        break;
      }
      e = Element();  // drop the record's storage now, not at the next run
    }
    for (int64_t i = placed; i < claim->pulled; ++i) (*run)[static_cast<size_t>(i)] = Element();
    stats_->busy_ns.fetch_add(NowNs() - start, std::memory_order_relaxed);
    return placed;
  }

  bool CanClaimLocked() const REQUIRES(mu_) {
    return !paused_ && next_in_ / node_->size_ < next_batch_ + max_batches_;
  }

  // Set at construction, then read-only.
  const MapAndBatchNode* node_;
  std::shared_ptr<StageStats> stats_;  // counters are atomics
  MapContext map_ctx_;
  int workers_wanted_ = 1;
  int64_t max_batches_ = 2;
  int64_t run_length_ = 1;  // elements a worker claims at once (within one batch)

  Mutex input_mu_ ACQUIRED_BEFORE(mu_);  // serialises input pulls
  Mutex mu_;
  std::unique_ptr<Iterator> input_ PT_GUARDED_BY(input_mu_);
  CondVar cv_ready_, cv_space_;
  std::map<int64_t, Open> open_ GUARDED_BY(mu_);
  int64_t next_in_ GUARDED_BY(mu_) = 0;     // sequence number of the next pull
  int64_t next_batch_ GUARDED_BY(mu_) = 0;  // next batch to hand out
  int64_t end_seq_ GUARDED_BY(mu_) = -1;    // elements in the stream, once the end was seen
  int64_t in_flight_ GUARDED_BY(mu_) = 0;
  bool input_done_ GUARDED_BY(mu_) = false;
  bool paused_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  std::exception_ptr error_ GUARDED_BY(mu_);
  std::vector<std::thread> workers_ GUARDED_BY(mu_);  // started under mu_, joined by ~
};

std::unique_ptr<Iterator> MapAndBatchNode::MakeIterator(const IteratorContext& ctx) const {
  return std::make_unique<MapAndBatchIterator>(ctx, this);
}

}  // namespace

NodePtr MakeMapAndBatchNode(NodePtr input, MapFn fn, int64_t batch_size, bool drop_remainder,
                            const MapOptions& options) {
  if (!fn) throw Error(ErrorCode::kInvalidArgument, "map_and_batch: empty function");
  if (batch_size < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "batch size must be >= 1, got " + std::to_string(batch_size),
                {.key = "batch_size"});
  }
  return std::make_shared<MapAndBatchNode>(std::move(input), std::move(fn), batch_size,
                                           drop_remainder, options);
}

}  // namespace shardflow::pipeline
