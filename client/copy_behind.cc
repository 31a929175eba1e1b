#include "client/copy_behind.h"

#include <algorithm>
#include <cstring>

namespace rs::client {

CopyBehind::CopyBehind(const uint8_t* from, uint8_t* to, size_t bytes)
    : from_(from),
      to_(to),
      bytes_(bytes),
      chunks_((bytes + kChunkBytes - 1) / kChunkBytes),
      state_(std::make_unique<std::atomic<uint8_t>[]>(chunks_)) {
  for (size_t i = 0; i < chunks_; ++i) state_[i].store(kPending, std::memory_order_relaxed);
}

void CopyBehind::Ensure(size_t offset, size_t bytes) {
  if (offset >= bytes_ || bytes == 0) return;
  const size_t end = std::min(bytes_, offset + std::min(bytes, bytes_ - offset));
  const size_t first = offset / kChunkBytes;
  const size_t last = (end - 1) / kChunkBytes;
  // Claim and copy first, then wait for the chunks others hold: a thread
  // never waits while it holds a claim, so two threads cannot wait on each
  // other.
  bool others = false;
  for (size_t i = first; i <= last; ++i) {
    uint8_t expected = kPending;
    if (!state_[i].compare_exchange_strong(expected, kCopying, std::memory_order_acquire)) {
      others = others || expected == kCopying;
      continue;
    }
    const size_t begin = i * kChunkBytes;
    std::memcpy(to_ + begin, from_ + begin, std::min(kChunkBytes, bytes_ - begin));
    state_[i].store(kCopied, std::memory_order_release);
    state_[i].notify_all();
  }
  if (!others) return;
  for (size_t i = first; i <= last; ++i) {
    uint8_t seen = state_[i].load(std::memory_order_acquire);
    while (seen != kCopied) {
      state_[i].wait(seen, std::memory_order_acquire);
      seen = state_[i].load(std::memory_order_acquire);
    }
  }
}

bool CopyBehind::Complete() const {
  for (size_t i = 0; i < chunks_; ++i) {
    if (state_[i].load(std::memory_order_acquire) != kCopied) return false;
  }
  return true;
}

}  // namespace rs::client
