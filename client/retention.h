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
// A copy may still be read after the watermark has passed it: a piece of an
// epoch the ranks have left can be half written to a socket, and the write
// goes on from the copy. An overflow copy is therefore freed by lease, not by
// watermark: Allocate hands out a lease with it, and the memory goes when
// the ring has released it AND every holder of the lease has let go (the
// operation holds it until no piece is being written from it and the copy
// is made, operation.h; a shadow redoing it holds it too).
// The ring's own memory stays mapped as long as the ring, so a late reader
// of a ring copy reads valid memory (perhaps a newer copy, in a piece of a
// left epoch that the reducers refuse).
//
// Pure memory management; not thread-safe (the client holds its mutex). A
// lease may be dropped on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>

#include "client/prefault.h"

namespace rs::client {

// One operation's copy. `lease` keeps an overflow copy allocated for as
// long as it is held; empty for a copy in the ring.
struct RetainedCopy {
  uint8_t* data = nullptr;
  std::shared_ptr<const void> lease;
};

class RetentionRing {
 public:
  explicit RetentionRing(size_t capacity) : capacity_(capacity) {}
  ~RetentionRing();
  RetentionRing(const RetentionRing&) = delete;
  RetentionRing& operator=(const RetentionRing&) = delete;

  // Room for operation `seq` (greater than every seq allocated before), or
  // data == nullptr when the ring is full. `overflow` allocates outside the
  // ring instead of failing (always the case for operations larger than it).
  RetainedCopy Allocate(uint64_t seq, size_t bytes, bool overflow);
  // Releases the copies of every operation below `seq`: ring space is
  // reused, an overflow copy goes with its last lease.
  void ReleaseBelow(uint64_t seq);

  size_t capacity() const { return capacity_; }
  size_t in_use() const { return in_use_; }  // copies in the ring and overflow (not the ring's padding)
  size_t ring_high_water() const { return high_water_; }  // ring bytes ever touched, from its start
  size_t peak() const { return peak_; }
  size_t overflow_allocations() const { return overflow_allocations_; }

 private:
  RetainedCopy AllocateOverflow(uint64_t seq, size_t bytes);

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
  std::map<uint64_t, std::pair<std::shared_ptr<uint8_t[]>, size_t>> overflow_;  // the ring's own lease
  size_t in_use_ = 0;
  size_t high_water_ = 0;
  size_t peak_ = 0;
  size_t overflow_allocations_ = 0;
};

}  // namespace rs::client
