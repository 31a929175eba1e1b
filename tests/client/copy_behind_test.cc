// The failover copy made behind the sends: a range is copied before a result
// may overwrite it, whichever thread gets there first, and what is kept is
// the input as it was, even when an in-place operation's results overwrite
// the caller's buffer while the copy is still being made.
#include "client/copy_behind.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "client/operation.h"

namespace rs::client {
namespace {

constexpr size_t kChunk = CopyBehind::kChunkBytes;

std::vector<uint8_t> Pattern(size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = static_cast<uint8_t>(i * 7 + i / 251);
  return v;
}

// The failover copy goes around the caches for all but small copies: what
// is kept must be the input, byte for byte, whatever the buffers' alignment
// and length, and not a byte beyond it may change.
TEST(CopyBehindTest, StreamingCopyKeepsEveryByteAtAnyAlignmentAndLength) {
  const std::vector<uint8_t> in = Pattern(3 * kChunk);
  constexpr uint8_t kUntouched = 0xEE;
  constexpr size_t kMargin = 128;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{65535},
                       kChunk, kChunk + 1, 2 * kChunk + 77}) {
    for (size_t to_offset : {0, 1, 8, 31, 32, 63}) {
      for (size_t from_offset : {0, 5, 16, 33}) {
        SCOPED_TRACE(::testing::Message() << bytes << " bytes, to + " << to_offset << ", from + " << from_offset);
        std::vector<uint8_t> out(bytes + 3 * kMargin, kUntouched);
        // `to` is to_offset bytes past a cache line, kMargin or more into `out`.
        const size_t line_start = kMargin - reinterpret_cast<uintptr_t>(out.data() + kMargin) % 64;
        const size_t at = line_start + to_offset;
        StreamingCopy(out.data() + at, in.data() + from_offset, bytes);
        ASSERT_EQ(std::memcmp(out.data() + at, in.data() + from_offset, bytes), 0);
        for (size_t i = 0; i < at; ++i) ASSERT_EQ(out[i], kUntouched) << "byte " << i << " before the copy";
        for (size_t i = at + bytes; i < out.size(); ++i) ASSERT_EQ(out[i], kUntouched) << "byte " << i << " after it";
      }
    }
  }
}

TEST(CopyBehindTest, EnsureCopiesTheChunksUnderTheRangeAndNothingElse) {
  const size_t bytes = 3 * kChunk + 100;  // a short last chunk
  const std::vector<uint8_t> in = Pattern(bytes);
  std::vector<uint8_t> out(bytes, 0);
  CopyBehind copy(in.data(), out.data(), bytes);
  copy.Ensure(kChunk + 10, 20);  // inside chunk 1 only
  EXPECT_FALSE(copy.Complete());
  EXPECT_EQ(std::memcmp(out.data() + kChunk, in.data() + kChunk, kChunk), 0);
  EXPECT_EQ(out[0], 0) << "chunk 0 was not asked for";
  EXPECT_EQ(out[2 * kChunk + 1], 0) << "chunk 2 was not asked for";
  copy.Ensure(bytes - 1, 1000);  // clipped to the end: the short chunk
  EXPECT_EQ(std::memcmp(out.data() + 3 * kChunk, in.data() + 3 * kChunk, 100), 0);
  copy.Ensure(bytes + 5, 10);  // past the end: nothing
  copy.EnsureAll();
  EXPECT_TRUE(copy.Complete());
  EXPECT_EQ(out, in);
}

TEST(CopyBehindTest, ThreadsRacingForTheSameChunksCopyEachOnceAndAllSeeItDone) {
  const size_t bytes = 64 * kChunk;
  const std::vector<uint8_t> in = Pattern(bytes);
  for (int round = 0; round < 20; ++round) {
    std::vector<uint8_t> out(bytes, 0);
    CopyBehind copy(in.data(), out.data(), bytes);
    std::vector<std::thread> threads;
    std::vector<int> saw_copied(4, 0);
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        // Each thread asks for overlapping ranges in a different order, and
        // checks that what it asked for is there once Ensure returns.
        for (size_t k = 0; k < 64; ++k) {
          const size_t chunk = (k * (t + 1) * 13) % 64;
          copy.Ensure(chunk * kChunk + 17, 2 * kChunk);
          const size_t end = std::min(bytes, chunk * kChunk + 17 + 2 * kChunk);
          saw_copied[t] += std::memcmp(out.data() + chunk * kChunk + 17, in.data() + chunk * kChunk + 17,
                                       end - chunk * kChunk - 17) == 0;
        }
      });
    }
    copy.EnsureAll();
    for (auto& th : threads) th.join();
    for (int t = 0; t < 4; ++t) EXPECT_EQ(saw_copied[t], 64) << "thread " << t << ", round " << round;
    ASSERT_EQ(out, in);
  }
}

// An in-place operation: each result is written over the caller's buffer
// right after BeforeResult, as the client's I/O thread does, while the
// calling thread is still making the copy. The copy keeps the input.
TEST(CopyBehindTest, InPlaceResultsNeverReachTheRetainedCopy) {
  const size_t count = 16 * kChunk / 4;  // float32 elements, 16 chunks
  const size_t pieces = 32;
  for (int round = 0; round < 10; ++round) {
    std::vector<float> buf(count);
    std::iota(buf.begin(), buf.end(), 1.0f);
    const std::vector<float> input = buf;
    std::vector<protocol::PieceSpan> spans;
    for (uint32_t i = 0; i < pieces; ++i) spans.push_back({i, i * count / pieces, count / pieces, i % 2, 0});
    OperationImpl op(1, buf.data(), buf.data(), count, DataType::kFloat32, ReduceOp::kSum, 0, spans, 2,
                     Clock::now());
    std::vector<float> kept(count, 0.0f);
    op.RetainInto({reinterpret_cast<uint8_t*>(kept.data()), nullptr});
    EXPECT_EQ(op.source(), reinterpret_cast<const uint8_t*>(buf.data())) << "pieces go out from the caller's buffer";
    std::thread results([&] {
      // Results in reverse order, racing the caller's front-to-back copy.
      for (size_t i = pieces; i-- > 0;) {
        const size_t offset = spans[i].offset * sizeof(float), bytes = spans[i].count * sizeof(float);
        op.BeforeResult(offset, bytes);
        for (size_t e = spans[i].offset; e < spans[i].offset + spans[i].count; ++e) buf[e] = -1.0f;
      }
    });
    op.CopyInput();
    results.join();
    ASSERT_EQ(kept, input) << "round " << round;
    // A restart sends from the copy from then on.
    op.Restart(1, spans);
    EXPECT_EQ(op.source(), reinterpret_cast<const uint8_t*>(kept.data()));
  }
}

TEST(CopyBehindTest, PartlyOverlappingBuffersAreCopiedBeforeAnythingIsSent) {
  std::vector<float> buf(2048);
  std::iota(buf.begin(), buf.end(), 0.0f);
  const std::vector<float> input(buf.begin(), buf.begin() + 1024);
  std::vector<float> kept(1024, 0.0f);
  // recv starts 100 elements into send: a result for one range overwrites
  // another range's input.
  OperationImpl op(1, buf.data(), buf.data() + 100, 1024, DataType::kFloat32, ReduceOp::kSum, 0,
                   {{0, 0, 1024, 0, 0}}, 1, Clock::now());
  op.RetainInto({reinterpret_cast<uint8_t*>(kept.data()), nullptr});
  EXPECT_EQ(kept, input);
  EXPECT_EQ(op.source(), reinterpret_cast<const uint8_t*>(kept.data()));
}

}  // namespace
}  // namespace rs::client
