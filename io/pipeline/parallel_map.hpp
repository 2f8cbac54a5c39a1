// ParallelMapIterator: the engine of every parallel stage — parallel map, prefetch (map with
// no function and one worker), and the read-ahead of parallel interleave.
//
// Workers pull from the input under an input lock (so pulls are serialised and numbered: the
// pull order defines element sequence numbers), run the map function outside any lock and put
// the result into a buffer keyed by sequence number. A worker takes a run of consecutive
// elements per round (up to capacity / (2 * workers)) to amortise locking and wake-ups. The
// consumer takes results:
//   deterministic:   strictly in sequence order (the output equals the sequential map's);
//   nondeterministic: the lowest-numbered result that is ready (a slow element does not block
//                    the ones behind it).
// The buffer is bounded: workers wait while (in flight + ready) >= capacity elements, or while
// ready bytes >= max_bytes (one element is always admitted, so nothing stalls on a huge one;
// a round admitted under the byte bound may overshoot it by its other elements).
// Errors: an exception from the input or the map function is stored in the failing element's
// slot and stops further pulls; the consumer rethrows it on its own thread when it reaches that
// slot (deterministic: after all earlier elements). The destructor stops and joins workers.
// State: Save() pauses the workers, waits until none is in flight, then writes the input's
// state and the ready results; Restore() REQUIRES that Next() has not been called.
// Autotune: SetParallelism/SetCapacity may be called from any thread while running; workers
// with index >= parallelism idle.
// Thread-safety: Next/TryNext/Peek/Save/Restore from one consumer thread at a time; the setters and
// getters from any thread. Locks: mu_ (buffer and control state) is taken before input_mu_
// (input pulls) where both are held; a worker never takes mu_ while it holds input_mu_.
#pragma once

#include <exception>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "core/thread_annotations.hpp"
#include "io/pipeline/iterator.hpp"
#include "io/pipeline/nodes.hpp"

namespace shardflow::pipeline {

struct ParallelConfig {
  std::string stage_name = "map";
  int max_workers = 1;      // threads started
  int initial_workers = 1;  // active at start (autotune raises it up to max_workers)
  int64_t capacity = 4;     // elements in flight + ready
  int64_t max_bytes = int64_t{256} << 20;
  bool deterministic = true;
};

class ParallelMapIterator : public Iterator {
 public:
  // fn may be empty (prefetch). `ctx` gives the stats registry and the epoch for MapContext.
  ParallelMapIterator(const IteratorContext& ctx, std::unique_ptr<Iterator> input, MapFn fn,
                      const ParallelConfig& config);
  ~ParallelMapIterator() override;

  bool Next(Element* out) override;
  enum class Poll { kReady, kNotReady, kEnd };
  // Never blocks: an element (kReady), nothing ready yet, or the end. Starts workers.
  Poll TryNext(Element* out);
  // Deterministic stages only (a nondeterministic one may hand out another element first), and
  // only once Next has started the workers (Peek starts nothing, so Restore stays possible).
  bool Peek(Element* out) override EXCLUDES(mu_);
  void Save(StateWriter* writer) override;
  void Restore(StateReader* reader) override;

  void SetParallelism(int workers);
  void SetCapacity(int64_t elements);
  int parallelism() const;
  int64_t capacity() const;
  int max_workers() const { return config_.max_workers; }
  StageStats& stats() { return *stats_; }

 private:
  struct Result {
    Element element;
    std::exception_ptr error;
    bool end = false;
    int64_t bytes = 0;
  };
  void StartLocked() REQUIRES(mu_);
  void WorkerLoop(int index) EXCLUDES(mu_, input_mu_);
  // Pulls up to `reserved` elements from the input, numbered in pull order.
  void PullRound(int64_t reserved, std::vector<std::pair<int64_t, Result>>* round)
      EXCLUDES(mu_, input_mu_);
  Poll TakeLocked(Element* out) REQUIRES(mu_);

  std::shared_ptr<StageStats> stats_;  // counters are atomics
  MapFn fn_;                           // set at construction, then only called
  ParallelConfig config_;              // set at construction, then read-only
  MapContext map_ctx_;                 // set at construction, then read-only

  mutable Mutex mu_ ACQUIRED_BEFORE(input_mu_);
  Mutex input_mu_;  // serialises input pulls
  std::unique_ptr<Iterator> input_ PT_GUARDED_BY(input_mu_);
  int64_t next_in_ GUARDED_BY(input_mu_) = 0;
  bool input_ended_ GUARDED_BY(input_mu_) = false;

  CondVar cv_ready_;  // consumer: a result arrived; Save: in-flight drained
  CondVar cv_space_;  // workers: room in the buffer, unpaused, or stop
  std::map<int64_t, Result> ready_ GUARDED_BY(mu_);
  int64_t next_out_ GUARDED_BY(mu_) = 0;
  int64_t in_flight_ GUARDED_BY(mu_) = 0;
  int64_t ready_bytes_ GUARDED_BY(mu_) = 0;
  int active_workers_ GUARDED_BY(mu_);
  int64_t capacity_ GUARDED_BY(mu_);
  bool input_done_ GUARDED_BY(mu_) = false;  // a worker saw the end or an error: no more pulls
  bool paused_ GUARDED_BY(mu_) = false;
  bool stop_ GUARDED_BY(mu_) = false;
  bool started_ GUARDED_BY(mu_) = false;
  bool finished_ GUARDED_BY(mu_) = false;
  std::exception_ptr error_ GUARDED_BY(mu_);  // once delivered, rethrown on every later Next()
  std::vector<std::thread> workers_ GUARDED_BY(mu_);  // started under mu_, joined by ~
};

}  // namespace shardflow::pipeline
