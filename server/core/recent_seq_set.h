// Remembers which operation sequence numbers of a session have been seen,
// over a sliding window of the most recent kWindow numbers, in fixed memory.
// A reducer does not know how many of an operation's pieces it owns (that
// depends on the number of reducers, which workers do not announce), so it
// counts an operation when the first of its pieces completes here; this set
// is how it tells "first" from "another piece of the same operation".
// Sequence numbers older than the window count as seen: a session would need
// more than kWindow operations in flight at once to be miscounted.
//
// Not thread-safe: the owner serializes calls (Session holds its mutex).
#pragma once

#include <bitset>
#include <cstdint>

namespace rs::server {

class RecentSeqSet {
 public:
  static constexpr uint64_t kWindow = 4096;

  // Marks `seq` seen; returns true the first time.
  bool Insert(uint64_t seq) {
    if (!any_) {
      any_ = true;
      high_ = seq;
    } else if (seq > high_) {
      // Slide the window forward, forgetting the numbers that fall out.
      const uint64_t shift = seq - high_;
      for (uint64_t i = 1; i <= shift && i <= kWindow; ++i) bits_.reset((high_ + i) % kWindow);
      high_ = seq;
    } else if (high_ - seq >= kWindow) {
      return false;
    }
    const size_t bit = seq % kWindow;
    if (bits_.test(bit)) return false;
    bits_.set(bit);
    return true;
  }

 private:
  std::bitset<kWindow> bits_;
  uint64_t high_ = 0;  // highest sequence number seen
  bool any_ = false;
};

}  // namespace rs::server
