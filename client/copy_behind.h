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
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

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

class CopyBehind {
 public:
  static constexpr size_t kChunkBytes = 64 << 10;

  // Copies `bytes` from `from` to `to` on demand; both outlive this object
  // (or at least every call to it).
  CopyBehind(const uint8_t* from, uint8_t* to, size_t bytes);
  CopyBehind(const CopyBehind&) = delete;
  CopyBehind& operator=(const CopyBehind&) = delete;

  // Returns once bytes [offset, offset + bytes) (clipped to the copy) are
  // copied: copies the chunks nobody has claimed, waits for the others.
  void Ensure(size_t offset, size_t bytes);
  void EnsureAll() { Ensure(0, bytes_); }
  bool Complete() const;

 private:
  enum State : uint8_t { kPending = 0, kCopying = 1, kCopied = 2 };

  const uint8_t* const from_;
  uint8_t* const to_;
  const size_t bytes_;
  const size_t chunks_;
  std::unique_ptr<std::atomic<uint8_t>[]> state_;
};

}  // namespace rs::client
