// Clang's thread-safety analysis (-Wthread-safety) for the classes whose
// locking is easy to get wrong: a mutex that is a capability, fields marked
// with the mutex that guards them, and functions marked with the mutex they
// need held (the `*Locked` ones) or must not hold. Under clang the build
// checks every access at compile time (CI builds the fuzz targets with
// clang, so the annotated classes are checked there); under gcc the macros
// are empty and Mutex is a plain std::mutex.
//
// libstdc++'s std::mutex and std::unique_lock are not annotated, so the
// annotated classes use Mutex, MutexLock (a lock_guard) and UniqueLock (a
// unique_lock the analysis understands; native() for condition variables).
#pragma once

#include <mutex>

#if defined(__clang__)
#define RS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define RS_THREAD_ANNOTATION(x)
#endif

#define RS_CAPABILITY(x) RS_THREAD_ANNOTATION(capability(x))
#define RS_SCOPED_CAPABILITY RS_THREAD_ANNOTATION(scoped_lockable)
#define RS_GUARDED_BY(x) RS_THREAD_ANNOTATION(guarded_by(x))
#define RS_PT_GUARDED_BY(x) RS_THREAD_ANNOTATION(pt_guarded_by(x))
#define RS_REQUIRES(...) RS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define RS_EXCLUDES(...) RS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define RS_ACQUIRE(...) RS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RS_RELEASE(...) RS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// The lock order, on a mutex's declaration. Clang checks it only with
// -Wthread-safety-beta, and only where one function takes both mutexes.
#define RS_ACQUIRED_AFTER(...) RS_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define RS_ACQUIRED_BEFORE(...) RS_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define RS_NO_THREAD_SAFETY_ANALYSIS RS_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace rs {

class RS_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() RS_ACQUIRE() { mu_.lock(); }
  void unlock() RS_RELEASE() { mu_.unlock(); }
  // For UniqueLock only: the analysis follows the lock through it.
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope.
class RS_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) RS_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RS_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Holds `mu` from construction, with unlock() and lock() in between, and
// the std::unique_lock a condition variable waits with (native()). The
// analysis treats a wait as keeping the lock, which is what the caller sees.
class RS_SCOPED_CAPABILITY UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) RS_ACQUIRE(mu) : lock_(mu.native()) {}
  ~UniqueLock() RS_RELEASE() = default;
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  void lock() RS_ACQUIRE() { lock_.lock(); }
  void unlock() RS_RELEASE() { lock_.unlock(); }
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace rs
