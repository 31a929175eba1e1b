#include "server/core/memory_budget.h"

#include <sys/mman.h>

#include <new>

namespace rs::server {
namespace {

size_t RoundUp(size_t bytes) {
  const size_t g = MemoryBudget::kGranule;
  return (bytes + g - 1) / g * g;
}

uint8_t* MapBlock(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

}  // namespace

PieceBuffer::~PieceBuffer() { budget_->Release(data_, capacity_); }

std::shared_ptr<MemoryBudget> MemoryBudget::Create(size_t limit_bytes) {
  return std::shared_ptr<MemoryBudget>(new MemoryBudget(limit_bytes));
}

MemoryBudget::~MemoryBudget() {
  for (auto& [capacity, data] : cache_) munmap(data, capacity);
}

void MemoryBudget::EvictLocked(size_t need) {
  // Unmap cached blocks, largest first, until `need` more bytes fit.
  while (in_use_ + cached_ + need > limit_ && !cache_.empty()) {
    auto it = std::prev(cache_.end());
    munmap(it->second, it->first);
    cached_ -= it->first;
    cache_.erase(it);
  }
}

std::unique_ptr<PieceBuffer> MemoryBudget::TryAllocate(size_t bytes, std::function<void()> wake) {
  const size_t capacity = RoundUp(bytes == 0 ? 1 : bytes);
  uint8_t* data = nullptr;
  {
    MutexLock lock(mu_);
    if (in_use_ + capacity > limit_) {
      if (wake) {
        ++waits_;
        waiters_.push_back(std::move(wake));
      }
      return nullptr;
    }
    auto it = cache_.find(capacity);
    if (it != cache_.end()) {
      data = it->second;
      cache_.erase(it);
      cached_ -= capacity;
    } else {
      EvictLocked(capacity);
    }
    in_use_ += capacity;
    peak_ = std::max(peak_, in_use_);
  }
  if (data == nullptr) {
    data = MapBlock(capacity);
    if (data == nullptr) {
      MutexLock lock(mu_);
      in_use_ -= capacity;
      return nullptr;
    }
  }
  return std::unique_ptr<PieceBuffer>(new PieceBuffer(shared_from_this(), data, capacity));
}

void MemoryBudget::Release(uint8_t* data, size_t capacity) {
  std::vector<std::function<void()>> wake;
  {
    MutexLock lock(mu_);
    in_use_ -= capacity;
    cache_.emplace(capacity, data);
    cached_ += capacity;
    wake.swap(waiters_);
  }
  for (auto& fn : wake) fn();
}

size_t MemoryBudget::in_use() const {
  MutexLock lock(mu_);
  return in_use_;
}
size_t MemoryBudget::mapped() const {
  MutexLock lock(mu_);
  return in_use_ + cached_;
}
size_t MemoryBudget::peak_in_use() const {
  MutexLock lock(mu_);
  return peak_;
}
uint64_t MemoryBudget::waits() const {
  MutexLock lock(mu_);
  return waits_;
}

}  // namespace rs::server
