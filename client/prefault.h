// Faults in the pages of one mapping ahead of their first write, on a thread
// of its own. A fresh anonymous page costs a page fault when it is first
// written (a kernel entry, zeroing, accounting); the failover copy of every
// operation's input writes fresh ring pages until the ring has been through
// its footprint once, and an operation's completion waits for its copy. On
// loopback, 4 MiB all-reduces took 14 - 18 ms while the ring was fresh and
// 9 - 12 ms once it was resident (docs/performance.md, "The first pass
// through the failover copies").
//
// The owner raises a target; pages in [0, target) are faulted in, in 512 KiB
// steps, with MADV_POPULATE_WRITE (Linux 5.14), which only maps the pages and
// leaves what is written there alone, so the owner may write at the same
// time. Where the kernel lacks it, pages fault on their first write, as
// without this class.
//
// The thread runs at normal priority, a step of kStepBytes per call, and
// only until the target is reached. Idle priority gained less where no CPU
// was idle, and a starved thread in the middle of a call, holding the
// process's memory-map lock, could hold up every mmap in the process.
//
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

namespace rs::client {

class Prefault {
 public:
  static constexpr size_t kStepBytes = 512 << 10;

  // `base` is page-aligned and outlives this object (unmap it after).
  Prefault(uint8_t* base, size_t bytes) : base_(base), bytes_(bytes) {}
  ~Prefault();  // stops the thread, and waits for the step in progress
  Prefault(const Prefault&) = delete;
  Prefault& operator=(const Prefault&) = delete;

  // Pages in [0, bytes) (clipped to the mapping) are to be faulted in. The
  // first call starts the thread.
  void RaiseTarget(size_t bytes);
  // Bytes from the start faulted in so far.
  size_t done() const { return done_.load(std::memory_order_acquire); }
  // False once the kernel refused MADV_POPULATE_WRITE: nothing more happens.
  bool supported() const { return supported_.load(std::memory_order_acquire); }

 private:
  void Run();

  uint8_t* const base_;
  const size_t bytes_;
  std::mutex mu_;
  std::condition_variable cv_;
  size_t target_ = 0;  // guarded by mu_
  bool stop_ = false;  // guarded by mu_
  std::atomic<size_t> done_{0};
  std::atomic<bool> supported_{true};
  std::thread thread_;  // started by the first RaiseTarget (under mu_)
};

}  // namespace rs::client
