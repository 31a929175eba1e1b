// The failover copy of one operation's input, made behind its sends instead
// of before them. With failover a rank keeps a copy of every input until all
// ranks have completed the operation (retention.h); copying the whole input
// before the first piece may leave puts a memcpy of the operation's size in
// front of the network, where a fast link would already be carrying it. So
// the first pieces go out from the caller's buffer, which stays valid and
// unchanged while the operation runs, with one exception: an in-place
// operation's results overwrite it. The copy is made in chunks, each claimed
// by whichever thread needs it first:
//
//   - the calling thread copies everything right after issuing the pieces,
//     while the I/O threads send;
//   - an I/O thread copies the chunks under a result before reading that
//     result into the caller's receive buffer (so a chunk is always copied
//     before any byte of it is overwritten), waiting for a chunk another
//     thread is copying;
//   - a restart in a new epoch (pieces go out again, from the copy) and the
//     operation's completion on this rank (the caller may then reuse its
//     buffer, and shadows redo the operation from the copy) need it whole.
//
// Every result covers its own range, so by the time the last result is in,
// every chunk has been copied. Thread-safe; no lock is held while copying.
//
// A float32 sum on a bfloat16 wire keeps its copy narrowed (NarrowedCopy):
// half the memory, and its pieces go out from the copy, so the input is read
// once to be narrowed and copied, not once to be copied and once more to be
// narrowed.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/dtype.h"

namespace rs::client {

// Copies `bytes` from `from` to `to` with stores that go around the caches
// where the CPU has them (x86-64: AVX2 when present, else SSE2), memcpy
// elsewhere and below a few KiB. For the failover copies: they are written
// once and read only when a reducer is lost, so the cache lines a normal
// store first reads in (read-for-ownership) and the lines it evicts (the
// next pieces' bytes on their way into the kernel) only cost. The stores are
// fenced before it returns: a release store after it publishes the copy to
// other threads as after memcpy. Thread-safe.
void StreamingCopy(uint8_t* to, const uint8_t* from, size_t bytes);

// A failover copy of a float32 sum in its 16-bit wire type, chunk by chunk
// of CopyBehind (kChunkElements values): each chunk narrowed into `data`,
// except one holding a value the wire type cannot carry (Inf, NaN, beyond
// its range), which is kept as float32 beside it. Elements() gives back a
// piece as it goes on the wire, bit for bit what narrowing the input would
// give. Each chunk is filled once, by one thread (CopyBehind's claim), and
// read only after that (CopyBehind::Ensure, or the copy complete).
class NarrowedCopy {
 public:
  static constexpr size_t kChunkElements = (64 << 10) / sizeof(float);

  // `data`: room for `count` 16-bit values, outliving this object.
  NarrowedCopy(DataType wire, uint16_t* data, uint64_t count);
  NarrowedCopy(const NarrowedCopy&) = delete;
  NarrowedCopy& operator=(const NarrowedCopy&) = delete;

  // Chunk `chunk` of the input (the `in` of the whole operation).
  void Fill(size_t chunk, const float* in);
  // Elements [offset, offset + count), filled before: the narrowed copy's
  // when every one fits the wire type (nullptr otherwise, with `wide` set to
  // their float32 values: the widened narrowed ones, and the input where a
  // chunk kept it; narrowing those again gives the same wire bits).
  const uint16_t* Elements(uint64_t offset, uint64_t count, std::vector<float>* wide) const;

 private:
  const DataType wire_;
  uint16_t* const data_;
  const uint64_t count_;
  std::vector<std::unique_ptr<float[]>> kept_;  // per chunk: its input, where it did not narrow
};

class CopyBehind {
 public:
  static constexpr size_t kChunkBytes = 64 << 10;

  // Copies `bytes` from `from` to `to` on demand; both outlive this object
  // (or at least every call to it).
  CopyBehind(const uint8_t* from, uint8_t* to, size_t bytes);
  // Narrows the float32 input `from` (`narrowed`'s count of values) into
  // `narrowed` instead; offsets and sizes stay those of the input.
  CopyBehind(const float* from, std::shared_ptr<NarrowedCopy> narrowed, size_t count);
  CopyBehind(const CopyBehind&) = delete;
  CopyBehind& operator=(const CopyBehind&) = delete;

  // Returns once bytes [offset, offset + bytes) (clipped to the copy) are
  // copied: copies the chunks nobody has claimed, waits for the others.
  void Ensure(size_t offset, size_t bytes) { Ensure(offset, bytes, /*backwards=*/false); }
  // The whole copy; a narrowed one from its end, since the I/O threads make
  // the chunks of their pieces from the start meanwhile: the two meet once
  // instead of taking turns on every chunk.
  void EnsureAll() { Ensure(0, bytes_, /*backwards=*/narrowed_ != nullptr); }
  bool Complete() const;

 private:
  enum State : uint8_t { kPending = 0, kCopying = 1, kCopied = 2 };

  void Ensure(size_t offset, size_t bytes, bool backwards);
  void CopyChunk(size_t chunk);
  static_assert(NarrowedCopy::kChunkElements * sizeof(float) == kChunkBytes);

  const uint8_t* const from_;
  uint8_t* const to_;
  const std::shared_ptr<NarrowedCopy> narrowed_;  // null: a plain copy
  const size_t bytes_;
  const size_t chunks_;
  std::unique_ptr<std::atomic<uint8_t>[]> state_;
};

}  // namespace rs::client
