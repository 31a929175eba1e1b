// CRC32C: the published check values, and the fast path (three interleaved
// hardware streams) against the portable table on every length and
// alignment, so a worker and a reducer on different CPUs agree.
#include "protocol/crc32c.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace rs::protocol {
namespace {

TEST(Crc32cTest, KnownValues) {
  const std::string check = "123456789";
  EXPECT_EQ(Crc32c(check.data(), check.size()), 0xE3069283u);
  EXPECT_EQ(Crc32cPortable(check.data(), check.size()), 0xE3069283u);
  // RFC 3720 (iSCSI) B.4 vectors.
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), inc(32);
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(inc.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
}

TEST(Crc32cTest, ContinuesAPreviousValue) {
  const std::string text = "the quick brown fox jumps over the lazy dog";
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    EXPECT_EQ(Crc32c(text.data() + cut, text.size() - cut, Crc32c(text.data(), cut)),
              Crc32c(text.data(), text.size()));
  }
}

// Every implementation this CPU has must give the portable table's values,
// on every length up to a few rounds of the widest one and at every alignment,
// and on lengths around the three-stream blocks (4 KiB lanes).
TEST(Crc32cTest, EveryImplementationMatchesTheTableOnEveryLengthAndAlignment) {
  std::mt19937_64 rng(42);
  std::vector<uint8_t> buf(3 * 3 * 4096 + 64 + 7);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  int tested = 0;
  for (Crc32cImpl impl : {Crc32cImpl::kAvx512, Crc32cImpl::kSse42}) {
    if (!Crc32cAvailable(impl)) continue;
    ++tested;
    SCOPED_TRACE(Crc32cImplName(impl));
    for (size_t offset = 0; offset < 8; ++offset) {
      for (size_t n = 0; n < 1300; ++n) {
        ASSERT_EQ(Crc32cUsing(impl, buf.data() + offset, n, 0x12345678u),
                  Crc32cPortable(buf.data() + offset, n, 0x12345678u))
            << offset << " " << n;
      }
    }
    for (size_t n : {size_t{3 * 4096 - 1}, size_t{3 * 4096}, size_t{3 * 4096 + 1}, size_t{6 * 4096 + 13},
                     buf.size() - 7}) {
      for (size_t offset : {0, 3}) {
        ASSERT_EQ(Crc32cUsing(impl, buf.data() + offset, n), Crc32cPortable(buf.data() + offset, n))
            << offset << " " << n;
      }
    }
  }
  std::printf("compared %d hardware implementation(s) with the table; in use: %s\n", tested,
              Crc32cImplementation());
}

TEST(Crc32cTest, DetectsEverySingleBitFlip) {
  std::vector<uint8_t> buf(3 * 4096 * 2 + 100, 0x5a);
  const uint32_t good = Crc32c(buf.data(), buf.size());
  for (size_t i = 0; i < buf.size(); i += 997) {
    for (int bit = 0; bit < 8; bit += 3) {
      buf[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_NE(Crc32c(buf.data(), buf.size()), good) << i;
      buf[i] ^= static_cast<uint8_t>(1u << bit);
    }
  }
}

TEST(Crc32cTest, UsesTheFastestAvailableImplementation) {
  const std::string in_use = Crc32cImplementation();
  for (Crc32cImpl impl : {Crc32cImpl::kAvx512, Crc32cImpl::kSse42, Crc32cImpl::kPortable}) {
    if (!Crc32cAvailable(impl)) continue;
    EXPECT_EQ(in_use, Crc32cImplName(impl));
    break;
  }
  EXPECT_TRUE(Crc32cAvailable(Crc32cImpl::kPortable));
}

}  // namespace
}  // namespace rs::protocol
