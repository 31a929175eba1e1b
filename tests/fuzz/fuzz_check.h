// Shared by the fuzz targets: FUZZ_CHECK states a property that must hold
// for every input; a violation aborts, which libFuzzer (or the replay
// runner) reports as a crash with the input that caused it. A small cursor
// over the fuzzer's bytes hands out fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#define FUZZ_CHECK(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "%s:%d: property violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)

namespace rs::fuzz {

// Reads fields off the input; past the end everything reads as zero.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  size_t left() const { return empty() ? 0 : size_ - pos_; }
  uint8_t Byte() { return empty() ? 0 : data_[pos_++]; }
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{Byte()} << (8 * i);
    return v;
  }
  // Up to `n` bytes (fewer at the end of the input).
  std::span<const uint8_t> Take(size_t n) {
    const size_t k = n < left() ? n : left();
    std::span<const uint8_t> out(data_ + pos_, k);
    pos_ += k;
    return out;
  }
  std::span<const uint8_t> Rest() { return Take(left()); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace rs::fuzz
