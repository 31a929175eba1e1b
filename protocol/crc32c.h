// CRC32C (Castagnoli, the iSCSI/ext4 polynomial), the end-to-end check on
// every piece a worker sends and every result a reducer sends back. Chosen at
// start-up from what the CPU has: carry-less multiplication folding on
// AVX-512 VPCLMULQDQ (tens of GB/s per core), else the SSE4.2 crc32
// instruction on three independent streams (its throughput is three times
// its latency) combined with precomputed shift tables, else a slicing-by-8
// table. All give the same values (the tests compare them on every length
// and alignment).
// Own code, no library: the NCCL plugin stays free of new shared libraries.
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace rs::protocol {

// The CRC32C of `bytes` bytes. `crc` continues a previous result, so
// Crc32c(b, nb, Crc32c(a, na)) is the CRC of a followed by b. Crc32c("123456789")
// is 0xE3069283.
uint32_t Crc32c(const void* data, size_t bytes, uint32_t crc = 0);

// The portable implementation, always available.
uint32_t Crc32cPortable(const void* data, size_t bytes, uint32_t crc = 0);

// The implementations, fastest first: AVX-512 VPCLMULQDQ folding (256 bytes
// a round), the SSE4.2 crc32 instruction on three streams, a portable table.
enum class Crc32cImpl { kAvx512, kSse42, kPortable };
bool Crc32cAvailable(Crc32cImpl impl);  // on this CPU
// Computes with a given implementation (the portable one if unavailable),
// for tests that compare them and benchmarks.
uint32_t Crc32cUsing(Crc32cImpl impl, const void* data, size_t bytes, uint32_t crc = 0);
const char* Crc32cImplName(Crc32cImpl impl);
// The name of the one Crc32c uses here.
const char* Crc32cImplementation();

}  // namespace rs::protocol
