// Lock annotations checked at compile time, and the annotated Mutex, MutexLock and CondVar
// that every class with shared state uses instead of std::mutex, std::lock_guard and
// std::condition_variable.
//
// With clang and -Wthread-safety (CMake option SHARDFLOW_THREAD_SAFETY_ANALYSIS=ON), reading
// a GUARDED_BY(mu_) member without holding mu_, calling a REQUIRES(mu_) helper without it, or
// returning with a lock still held is a compile error. Under GCC the macros expand to nothing.
//
//   class Queue {
//     Mutex mu_;
//     CondVar cv_;
//     std::deque<int> items_ GUARDED_BY(mu_);
//     int PopLocked() REQUIRES(mu_);
//   };
//   { MutexLock lock(mu_); while (items_.empty()) cv_.Wait(mu_); ... }
//
// Why a wrapper: libstdc++'s std::mutex carries no capability attribute, so the analysis
// cannot see what it protects. Mutex wraps std::mutex (same size and speed, constexpr
// constructor so a namespace-scope Mutex is constant-initialised) and names it a capability.
// Why CondVar, and why without predicates: a wait has to release and re-take the lock the
// analysis tracks. CondVar::Wait(mu) REQUIRES(mu) adopts mu's native std::mutex into a
// std::unique_lock for std::condition_variable (no second mutex, unlike
// std::condition_variable_any, and ThreadSanitizer sees the real pthread mutex), and hands it
// back on return, so to the analysis mu stays held throughout. Waits take no predicate
// lambda: clang analyses a lambda body as a separate function that holds no lock, so a
// predicate reading guarded members would not compile; callers write the loop
// `while (!ready_) cv_.Wait(mu_);`, in which the condition is checked under the lock.
// Thread-safety: Mutex and CondVar are themselves thread-safe; a MutexLock belongs to the one
// thread that created it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define SF_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SF_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are capabilities (locks).
#define CAPABILITY(x) SF_THREAD_ANNOTATION(capability(x))
// On an RAII class: construction acquires, destruction releases.
#define SCOPED_CAPABILITY SF_THREAD_ANNOTATION(scoped_lockable)
// On a member: reads need the lock held (shared or exclusive), writes need it exclusive.
#define GUARDED_BY(x) SF_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: what it points to is guarded (the pointer itself is not).
#define PT_GUARDED_BY(x) SF_THREAD_ANNOTATION(pt_guarded_by(x))
// On a lock: the order in which locks must be taken.
#define ACQUIRED_BEFORE(...) SF_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) SF_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// On a function: the caller must hold (REQUIRES) or must not hold (EXCLUDES) the lock.
#define REQUIRES(...) SF_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) SF_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) SF_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// On a function: it takes (ACQUIRE) or gives back (RELEASE) the lock.
#define ACQUIRE(...) SF_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) SF_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) SF_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) SF_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) SF_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// On a function: fails at run time unless the lock is held; the analysis then assumes it is.
#define ASSERT_CAPABILITY(x) SF_THREAD_ANNOTATION(assert_capability(x))
// On a function: returns the lock given (for accessors of a lock).
#define RETURN_CAPABILITY(x) SF_THREAD_ANNOTATION(lock_returned(x))
// On a function: not analysed. Every use says why in a comment.
#define NO_THREAD_SAFETY_ANALYSIS SF_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace shardflow {

class CondVar;

class CAPABILITY("mutex") Mutex {
 public:
  constexpr Mutex() noexcept = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~MutexLock() RELEASE() { mu_.Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Holds `mu` for its scope except between Unlock() and the next Lock() (e.g. around a slow
// call that must not run under the lock). The destructor releases only a held lock.
class SCOPED_CAPABILITY ReleasableMutexLock {
 public:
  explicit ReleasableMutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.Lock(); }
  ~ReleasableMutexLock() RELEASE() {
    if (held_) mu_.Unlock();
  }
  void Unlock() RELEASE() {
    mu_.Unlock();
    held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_.Lock();
    held_ = true;
  }
  ReleasableMutexLock(const ReleasableMutexLock&) = delete;
  ReleasableMutexLock& operator=(const ReleasableMutexLock&) = delete;

 private:
  Mutex& mu_;
  bool held_ = true;
};

// A condition variable waited on with a Mutex held. Spurious wake-ups happen: wait in a loop
// that re-checks the condition.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases mu, sleeps until notified (or spuriously woken), re-takes mu.
  void Wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // still locked: ownership goes back to the caller's MutexLock
  }
  // As Wait, but also returns after `timeout`; returns false when it timed out.
  template <class Rep, class Period>
  bool WaitFor(Mutex& mu, std::chrono::duration<Rep, Period> timeout) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
    const bool notified = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return notified;
  }
  void NotifyOne() noexcept { cv_.notify_one(); }
  void NotifyAll() noexcept { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace shardflow
