// Where a worker keeps copies of its contributions for a failover: a rank
// may complete an operation (and hand its buffers back to the caller) while
// another rank still waits for a piece of it from a reducer that then dies;
// redoing that operation on the surviving reducers needs every rank's input
// again. So with failover on, each operation's input is copied here when it
// is issued, and the copy is dropped once the session's completion watermark
// says every rank has completed it.
//
// Operations are issued and released in sequence order, so the copies live
// in one ring buffer of fixed capacity (allocated on first use, so untouched
// capacity costs no resident memory). An operation larger than the ring, or
// one that must go out while the ring is full during a failover, gets its own
// allocation ("overflow"), counted in the same totals.
//
// Pure memory management; not thread-safe (the client holds its mutex).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>

#include "client/prefault.h"

namespace rs::client {

class RetentionRing {
 public:
  explicit RetentionRing(size_t capacity) : capacity_(capacity) {}
  ~RetentionRing();
  RetentionRing(const RetentionRing&) = delete;
  RetentionRing& operator=(const RetentionRing&) = delete;

  // Room for operation `seq` (greater than every seq allocated before), or
  // nullptr when the ring is full. `overflow` allocates outside the ring
  // instead of failing (always the case for operations larger than it).
  uint8_t* Allocate(uint64_t seq, size_t bytes, bool overflow);
  // Frees the copies of every operation below `seq`.
  void ReleaseBelow(uint64_t seq);

  size_t capacity() const { return capacity_; }
  size_t in_use() const { return in_use_; }  // copies in the ring and overflow (not the ring's padding)
  size_t ring_high_water() const { return high_water_; }  // ring bytes ever touched, from its start
  size_t peak() const { return peak_; }
  size_t overflow_allocations() const { return overflow_allocations_; }

 private:
  uint8_t* AllocateOverflow(uint64_t seq, size_t bytes);

  struct Entry {
    uint64_t seq;
    size_t offset;  // in the ring
    size_t bytes;   // ring bytes taken, padding included
    size_t data;    // of which the copy (aligned)
  };

  const size_t capacity_;
  uint8_t* ring_ = nullptr;  // mmap'd on first use: pages become resident as they are written
  // Faults in, ahead of the copies, the part of the ring they will cycle
  // through (prefault.h): with ring_.
  std::unique_ptr<Prefault> prefault_;
  std::deque<Entry> entries_;  // ring allocations, oldest first
  size_t head_ = 0;            // next free offset
  size_t ring_used_ = 0;       // bytes taken, padding included
  std::map<uint64_t, std::pair<std::unique_ptr<uint8_t[]>, size_t>> overflow_;
  size_t in_use_ = 0;
  size_t high_water_ = 0;
  size_t peak_ = 0;
  size_t overflow_allocations_ = 0;
};

}  // namespace rs::client
