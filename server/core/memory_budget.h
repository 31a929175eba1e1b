// The reducer's memory budget: every piece buffer comes from here, and the
// total mapped for pieces (in use plus cached for reuse) never exceeds the
// limit. When a buffer cannot be had, the caller registers a waiter and stops
// reading its socket, so TCP flow control pushes back on the sender instead of
// the reducer allocating more. Buffers are mmap'd directly (not malloc'd) so
// that what is freed really leaves the process, and recycled by size so the
// page-fault cost of fresh memory is paid once.
//
// Thread-safe: all methods may be called from any thread. Its mutex is a
// leaf: nothing else is locked under it, and the wake-ups run after it is
// released (lock order in session.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "common/thread_annotations.h"

namespace rs::server {

class MemoryBudget;
class Session;

// A block of budgeted memory; returns itself to the budget when destroyed.
class PieceBuffer {
 public:
  PieceBuffer(const PieceBuffer&) = delete;
  PieceBuffer& operator=(const PieceBuffer&) = delete;
  ~PieceBuffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  friend class MemoryBudget;
  PieceBuffer(std::shared_ptr<MemoryBudget> budget, uint8_t* data, size_t capacity)
      : budget_(std::move(budget)), data_(data), capacity_(capacity) {}

  std::shared_ptr<MemoryBudget> budget_;
  uint8_t* data_;
  size_t capacity_;
};

class MemoryBudget : public std::enable_shared_from_this<MemoryBudget> {
 public:
  static constexpr size_t kGranule = 64 * 1024;

  static std::shared_ptr<MemoryBudget> Create(size_t limit_bytes);
  ~MemoryBudget();

  // A buffer of at least `bytes`, or nullptr when the budget cannot cover it
  // now. On nullptr, `wake` (if given) is registered atomically with the
  // failed attempt and called once by the thread that next releases a
  // buffer; it must not block. Requests larger than the limit always fail.
  std::unique_ptr<PieceBuffer> TryAllocate(size_t bytes, std::function<void()> wake = {}) RS_EXCLUDES(mu_);

  size_t limit() const { return limit_; }
  size_t in_use() const;   // bytes handed out
  size_t mapped() const;   // in use + cached
  size_t peak_in_use() const;
  uint64_t waits() const;  // times a caller had to wait

 private:
  friend class PieceBuffer;
  explicit MemoryBudget(size_t limit) : limit_(limit) {}
  // Runs the waiters' wake-ups after releasing mu_.
  void Release(uint8_t* data, size_t capacity) RS_EXCLUDES(mu_);
  void EvictLocked(size_t need) RS_REQUIRES(mu_);

  const size_t limit_;
  mutable Mutex mu_;
  size_t in_use_ RS_GUARDED_BY(mu_) = 0;
  size_t cached_ RS_GUARDED_BY(mu_) = 0;
  size_t peak_ RS_GUARDED_BY(mu_) = 0;
  uint64_t waits_ RS_GUARDED_BY(mu_) = 0;
  std::multimap<size_t, uint8_t*> cache_ RS_GUARDED_BY(mu_);  // capacity -> block
  std::vector<std::function<void()>> waiters_ RS_GUARDED_BY(mu_);
};

}  // namespace rs::server
