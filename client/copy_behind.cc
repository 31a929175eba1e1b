#include "client/copy_behind.h"

#include <algorithm>
#include <cstring>

#include "client/wire_codec.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RS_STREAMING_STORES 1
#endif

namespace rs::client {
namespace {

#ifdef RS_STREAMING_STORES
// Below this the fence and the unaligned ends cost more than the cache saves.
constexpr size_t kMinStreamingCopy = 4096;
constexpr size_t kLine = 64;

// `lines` whole cache lines to a line-aligned `to`.
__attribute__((target("avx2"))) void StreamLinesAvx2(uint8_t* to, const uint8_t* from, size_t lines) {
  for (size_t i = 0; i < lines; ++i, to += kLine, from += kLine) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to + 32), b);
  }
}

void StreamLinesSse2(uint8_t* to, const uint8_t* from, size_t lines) {
  for (size_t i = 0; i < lines; ++i, to += kLine, from += kLine) {
    for (size_t k = 0; k < kLine; k += 16) {
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + k), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + k)));
    }
  }
}

using StreamLines = void (*)(uint8_t*, const uint8_t*, size_t);

StreamLines PickStreamLines() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? StreamLinesAvx2 : StreamLinesSse2;
}
#endif

}  // namespace

void StreamingCopy(uint8_t* to, const uint8_t* from, size_t bytes) {
#ifdef RS_STREAMING_STORES
  if (bytes >= kMinStreamingCopy) {
    static const StreamLines stream_lines = PickStreamLines();
    // Whole lines only: a line half written by streaming stores and half by
    // the cache is written twice.
    const size_t head = (kLine - reinterpret_cast<uintptr_t>(to) % kLine) % kLine;
    const size_t lines = (bytes - head) / kLine;
    const size_t tail = head + lines * kLine;
    std::memcpy(to, from, head);
    stream_lines(to + head, from + head, lines);
    std::memcpy(to + tail, from + tail, bytes - tail);
    _mm_sfence();
    return;
  }
#endif
  std::memcpy(to, from, bytes);
}

NarrowedCopy::NarrowedCopy(DataType wire, uint16_t* data, uint64_t count)
    : wire_(wire), data_(data), count_(count), kept_((count + kChunkElements - 1) / kChunkElements) {}

void NarrowedCopy::Fill(size_t chunk, const float* in) {
  const uint64_t begin = chunk * kChunkElements;
  const size_t n = std::min<uint64_t>(kChunkElements, count_ - begin);
  if (NarrowPiece(wire_, in + begin, data_ + begin, n)) return;
  kept_[chunk] = std::make_unique<float[]>(n);
  std::memcpy(kept_[chunk].get(), in + begin, n * sizeof(float));
}

const uint16_t* NarrowedCopy::Elements(uint64_t offset, uint64_t count, std::vector<float>* wide) const {
  const size_t first = offset / kChunkElements;
  const size_t last = count == 0 ? first : (offset + count - 1) / kChunkElements;
  bool narrowed = true;
  for (size_t i = first; i <= last && i < kept_.size(); ++i) narrowed = narrowed && kept_[i] == nullptr;
  if (narrowed) return data_ + offset;
  wide->resize(count);
  for (uint64_t at = offset; at < offset + count;) {
    const size_t chunk = at / kChunkElements;
    const uint64_t chunk_end = std::min<uint64_t>((chunk + 1) * kChunkElements, offset + count);
    float* out = wide->data() + (at - offset);
    if (kept_[chunk] != nullptr) {
      std::memcpy(out, kept_[chunk].get() + (at - chunk * kChunkElements), (chunk_end - at) * sizeof(float));
    } else {
      WidenPart(wire_, data_ + at, out, chunk_end - at);
    }
    at = chunk_end;
  }
  return nullptr;
}

CopyBehind::CopyBehind(const float* from, std::shared_ptr<NarrowedCopy> narrowed, size_t count)
    : from_(reinterpret_cast<const uint8_t*>(from)),
      to_(nullptr),
      narrowed_(std::move(narrowed)),
      bytes_(count * sizeof(float)),
      chunks_((bytes_ + kChunkBytes - 1) / kChunkBytes),
      state_(std::make_unique<std::atomic<uint8_t>[]>(chunks_)) {
  for (size_t i = 0; i < chunks_; ++i) state_[i].store(kPending, std::memory_order_relaxed);
}

CopyBehind::CopyBehind(const uint8_t* from, uint8_t* to, size_t bytes)
    : from_(from),
      to_(to),
      bytes_(bytes),
      chunks_((bytes + kChunkBytes - 1) / kChunkBytes),
      state_(std::make_unique<std::atomic<uint8_t>[]>(chunks_)) {
  for (size_t i = 0; i < chunks_; ++i) state_[i].store(kPending, std::memory_order_relaxed);
}

void CopyBehind::Ensure(size_t offset, size_t bytes, bool backwards) {
  if (offset >= bytes_ || bytes == 0) return;
  const size_t end = std::min(bytes_, offset + std::min(bytes, bytes_ - offset));
  const size_t first = offset / kChunkBytes;
  const size_t last = (end - 1) / kChunkBytes;
  // Claim and copy first, then wait for the chunks others hold: a thread
  // never waits while it holds a claim, so two threads cannot wait on each
  // other.
  bool others = false;
  for (size_t n = 0; n <= last - first; ++n) {
    const size_t i = backwards ? last - n : first + n;
    uint8_t expected = kPending;
    if (!state_[i].compare_exchange_strong(expected, kCopying, std::memory_order_acquire)) {
      others = others || expected == kCopying;
      continue;
    }
    CopyChunk(i);
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

void CopyBehind::CopyChunk(size_t chunk) {
  if (narrowed_ != nullptr) {
    // Normal stores: the pieces go out from this copy, soon.
    narrowed_->Fill(chunk, reinterpret_cast<const float*>(from_));
    return;
  }
  const size_t begin = chunk * kChunkBytes;
  StreamingCopy(to_ + begin, from_ + begin, std::min(kChunkBytes, bytes_ - begin));
}

bool CopyBehind::Complete() const {
  for (size_t i = 0; i < chunks_; ++i) {
    if (state_[i].load(std::memory_order_acquire) != kCopied) return false;
  }
  return true;
}

}  // namespace rs::client
