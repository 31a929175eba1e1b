#include "client/retention.h"

#include <sys/mman.h>

#include <algorithm>

namespace rs::client {
namespace {

constexpr size_t kAlign = 64;
size_t Round(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }
constexpr size_t kEarlyWrapMargin = 8;

}  // namespace

RetentionRing::~RetentionRing() {
  prefault_.reset();  // before the pages it faults in go
  if (ring_ != nullptr) munmap(ring_, capacity_);
}

RetainedCopy RetentionRing::Allocate(uint64_t seq, size_t bytes, bool overflow) {
  const size_t need = Round(std::max<size_t>(bytes, 1));
  if (need <= capacity_) {
    // The ring holds [tail, head) in order; the free space is after head
    // (up to the end or the tail) and, when wrapped, before the tail.
    const size_t tail = entries_.empty() ? head_ : entries_.front().offset;
    size_t offset = SIZE_MAX;
    size_t padding = 0;
    if (entries_.empty()) {
      head_ = 0;
      offset = 0;
    } else if (head_ > tail || (head_ == tail && ring_used_ == 0)) {
      // Wrap early once the space before the tail could hold several times
      // everything kept now and this one: a job of small operations then
      // cycles through a few resident MiB instead of the whole capacity,
      // whose every fresh page costs a page fault (1 MiB operations: 66 000
      // faults per rank over the first pass through 256 MiB, measured) and
      // resident memory. The margin keeps bursts fitting: after a wrap only
      // the space before the tail is free until the copies at the end go,
      // and a burst of large operations (DDP's buckets) must not find the
      // ring full then (jobs whose copies are large never wrap early).
      const size_t live = head_ - tail;
      if (tail >= kEarlyWrapMargin * (live + need)) {
        padding = capacity_ - head_;
        offset = 0;
      } else if (capacity_ - head_ >= need) {
        offset = head_;
      } else if (tail >= need) {
        padding = capacity_ - head_;  // skip the end, wrap to the start
        offset = 0;
      }
    } else if (tail - head_ >= need) {
      offset = head_;
    }
    if (offset != SIZE_MAX) {
      if (ring_ == nullptr) {
        void* p = mmap(nullptr, capacity_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) return overflow || need > capacity_ ? AllocateOverflow(seq, need) : RetainedCopy{};
        ring_ = static_cast<uint8_t*>(p);
        prefault_ = std::make_unique<Prefault>(ring_, capacity_);
      }
      entries_.push_back({seq, offset, need + padding, need});
      head_ = offset + need;
      high_water_ = std::max(high_water_, head_);
      if (head_ == capacity_) head_ = 0;
      ring_used_ += need + padding;
      in_use_ += need;
      peak_ = std::max(peak_, in_use_);
      // What the copies will cycle through: the early wrap's bound
      // (kEarlyWrapMargin times what is kept) past what is kept, and some
      // slack; the whole ring for large copies. Faulted in ahead of them, off
      // this thread.
      prefault_->RaiseTarget(std::max(high_water_, (kEarlyWrapMargin + 2) * in_use_));
      return {ring_ + offset, nullptr};
    }
  }
  if (!overflow && need <= capacity_) return {};
  return AllocateOverflow(seq, need);
}

RetainedCopy RetentionRing::AllocateOverflow(uint64_t seq, size_t bytes) {
  auto& slot = overflow_[seq];
  slot.first.reset(new uint8_t[bytes]);
  slot.second = bytes;
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  ++overflow_allocations_;
  return {slot.first.get(), slot.first};
}

void RetentionRing::ReleaseBelow(uint64_t seq) {
  while (!entries_.empty() && entries_.front().seq < seq) {
    ring_used_ -= entries_.front().bytes;
    in_use_ -= entries_.front().data;
    entries_.pop_front();
  }
  if (entries_.empty()) {
    head_ = 0;
    ring_used_ = 0;
  }
  // The ring's lease only: a writer still reading a copy keeps it (the
  // header says why). It is no longer counted as retained.
  for (auto it = overflow_.begin(); it != overflow_.end() && it->first < seq;) {
    in_use_ -= it->second.second;
    it = overflow_.erase(it);
  }
}

}  // namespace rs::client
