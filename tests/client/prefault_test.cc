// Faulting in the failover ring ahead of the copies: the pages up to the
// target become resident on the helper thread, none beyond it, and what the
// owner wrote meanwhile is left as it was. The kernel's answer (mincore) is
// the check; on a kernel without MADV_POPULATE_WRITE (before 5.14) there is
// nothing to check and the tests say so.
#include "client/prefault.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "client/retention.h"

namespace rs::client {
namespace {

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Resident pages of [base + from, base + to).
size_t ResidentPages(uint8_t* base, size_t from, size_t to) {
  const size_t page = PageSize();
  std::vector<unsigned char> in((to - from) / page);
  if (mincore(base + from, to - from, in.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

// Waits (at most 10 s) until `pf` has faulted in `bytes` or given up.
bool WaitFor(const Prefault& pf, size_t bytes) {
  for (int i = 0; i < 1000 && pf.supported() && pf.done() < bytes; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pf.done() >= bytes;
}

class Mapping {
 public:
  explicit Mapping(size_t bytes) : bytes_(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base_ = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  }
  ~Mapping() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  uint8_t* base() const { return base_; }

 private:
  size_t bytes_;
  uint8_t* base_ = nullptr;
};

TEST(PrefaultTest, PagesUpToTheTargetBecomeResidentAndNoneBeyond) {
  constexpr size_t kMiB = 1 << 20;
  Mapping map(16 * kMiB);
  ASSERT_NE(map.base(), nullptr);
  // What the owner wrote before: the helper must leave it alone.
  map.base()[0] = 0xAB;
  map.base()[3 * kMiB + 5] = 0xCD;
  {
    Prefault pf(map.base(), 16 * kMiB);
    pf.RaiseTarget(6 * kMiB + 1);  // rounded up to a whole page
    if (!WaitFor(pf, 6 * kMiB + PageSize())) {
      ASSERT_FALSE(pf.supported()) << "stalled at " << pf.done() << " bytes";
      GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE: pages fault on their first write";
    }
    EXPECT_EQ(pf.done(), 6 * kMiB + PageSize()) << "no further than the target";
    EXPECT_EQ(ResidentPages(map.base(), 0, 6 * kMiB + PageSize()), (6 * kMiB) / PageSize() + 1);
    EXPECT_EQ(ResidentPages(map.base(), 8 * kMiB, 16 * kMiB), 0u) << "pages past the target were faulted in";
    // A lower target changes nothing; a higher one goes on from there.
    pf.RaiseTarget(kMiB);
    pf.RaiseTarget(10 * kMiB);
    ASSERT_TRUE(WaitFor(pf, 10 * kMiB));
    EXPECT_EQ(ResidentPages(map.base(), 0, 10 * kMiB), 10 * kMiB / PageSize());
    // Past the mapping is clipped to it.
    pf.RaiseTarget(64 * kMiB);
    ASSERT_TRUE(WaitFor(pf, 16 * kMiB));
    EXPECT_EQ(pf.done(), 16 * kMiB);
  }
  EXPECT_EQ(map.base()[0], 0xAB);
  EXPECT_EQ(map.base()[3 * kMiB + 5], 0xCD);
  EXPECT_EQ(map.base()[3 * kMiB + 6], 0) << "fresh pages read as zero";
}

// The failover ring: after one 4 MiB copy, the part of the ring a job of such
// operations cycles through is resident before the next copies need it, and
// the rest of the 256 MiB is not (resident memory the rank would pay for).
TEST(PrefaultTest, TheRetentionRingIsFaultedInAheadOfItsCopies) {
  constexpr size_t kMiB = 1 << 20;
  RetentionRing ring(256 * kMiB);
  uint8_t* base = ring.Allocate(0, 4 * kMiB, false).data;
  ASSERT_NE(base, nullptr);  // the first copy starts the ring
  std::memset(base, 7, 4 * kMiB);
  const size_t ahead = 40 * kMiB;  // (early wrap margin 8 + 2) x 4 MiB
  bool resident = false;
  for (int i = 0; i < 1000 && !resident; ++i) {
    resident = ResidentPages(base, 0, ahead) == ahead / PageSize();
    if (!resident) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!resident) {
    Mapping probe(PageSize());
    ASSERT_NE(probe.base(), nullptr);
    ASSERT_NE(madvise(probe.base(), PageSize(), MADV_POPULATE_WRITE), 0)
        << "the kernel populates pages, but the ring's next " << ahead / kMiB << " MiB were not faulted in";
    GTEST_SKIP() << "this kernel has no MADV_POPULATE_WRITE: pages fault on their first write";
  }
  EXPECT_EQ(ResidentPages(base, 64 * kMiB, 256 * kMiB), 0u) << "beyond what the copies will use";
  EXPECT_EQ(base[4 * kMiB - 1], 7) << "the copy is intact";
}

}  // namespace
}  // namespace rs::client
