#include "protocol/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#include <immintrin.h>
#include <wmmintrin.h>
#define RS_CRC32C_X86 1
#endif

namespace rs::protocol {
namespace {

// Reflected polynomial of CRC32C.
constexpr uint32_t kPoly = 0x82F63B78u;

// Slicing-by-8 tables: kTable[k][b] is the raw CRC state after feeding byte b
// followed by k zero bytes into a zero state.
constexpr std::array<std::array<uint32_t, 256>, 8> MakeTables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
    t[0][b] = c;
  }
  for (int k = 1; k < 8; ++k) {
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
  }
  return t;
}
constexpr auto kTable = MakeTables();

uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));  // little-endian hosts only (x86-64, aarch64)
  return v;
}

// Raw state update (no pre/post inversion).
uint32_t UpdatePortable(uint32_t s, const uint8_t* p, size_t n) {
  while (n >= 8) {
    const uint64_t v = Load64(p) ^ s;
    s = kTable[7][v & 0xff] ^ kTable[6][(v >> 8) & 0xff] ^ kTable[5][(v >> 16) & 0xff] ^
        kTable[4][(v >> 24) & 0xff] ^ kTable[3][(v >> 32) & 0xff] ^ kTable[2][(v >> 40) & 0xff] ^
        kTable[1][(v >> 48) & 0xff] ^ kTable[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) s = (s >> 8) ^ kTable[0][(s ^ *p++) & 0xff];
  return s;
}

#ifdef RS_CRC32C_X86

// Each of the three streams covers kLane bytes per round.
constexpr size_t kLane = 4096;

__attribute__((target("sse4.2"))) uint32_t UpdateHw1(uint32_t s, const uint8_t* p, size_t n) {
  uint64_t s64 = s;
  while (n >= 8) {
    s64 = _mm_crc32_u64(s64, Load64(p));
    p += 8;
    n -= 8;
  }
  uint32_t s32 = static_cast<uint32_t>(s64);
  while (n-- > 0) s32 = _mm_crc32_u8(s32, *p++);
  return s32;
}

// Shifting a raw state over `lane` zero bytes is linear in the state, so it
// is four table lookups, one per state byte. Built once from the hardware
// update itself.
struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> t{};
  uint32_t Apply(uint32_t s) const {
    return t[0][s & 0xff] ^ t[1][(s >> 8) & 0xff] ^ t[2][(s >> 16) & 0xff] ^ t[3][s >> 24];
  }
};

__attribute__((target("sse4.2"))) ShiftTable MakeShift(size_t zeros) {
  static const std::array<uint8_t, 2 * kLane> kZeros{};
  uint32_t bit_images[32];
  for (int i = 0; i < 32; ++i) bit_images[i] = UpdateHw1(1u << i, kZeros.data(), zeros);
  ShiftTable table;
  for (int k = 0; k < 4; ++k) {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t v = 0;
      for (int i = 0; i < 8; ++i) {
        if (b & (1u << i)) v ^= bit_images[8 * k + i];
      }
      table.t[k][b] = v;
    }
  }
  return table;
}

struct Shifts {
  ShiftTable one_lane;
  ShiftTable two_lanes;
};

const Shifts& GetShifts() {
  static const Shifts shifts{MakeShift(kLane), MakeShift(2 * kLane)};
  return shifts;
}

__attribute__((target("sse4.2"))) uint32_t UpdateHw(uint32_t s, const uint8_t* p, size_t n) {
  if (n >= 3 * kLane) {
    const Shifts& shifts = GetShifts();
    while (n >= 3 * kLane) {
      uint64_t a = s, b = 0, c = 0;
      const uint8_t* pa = p;
      const uint8_t* pb = p + kLane;
      const uint8_t* pc = p + 2 * kLane;
      for (size_t i = 0; i < kLane; i += 8) {
        a = _mm_crc32_u64(a, Load64(pa + i));
        b = _mm_crc32_u64(b, Load64(pb + i));
        c = _mm_crc32_u64(c, Load64(pc + i));
      }
      // State after a||b||c = shift(shift(a) ^ b) ^ c, the shifts over one lane.
      s = shifts.two_lanes.Apply(static_cast<uint32_t>(a)) ^ shifts.one_lane.Apply(static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(c);
      p += 3 * kLane;
      n -= 3 * kLane;
    }
  }
  return UpdateHw1(s, p, n);
}

// Carry-less multiplication folding (VPCLMULQDQ) for long buffers: the
// message is a polynomial over GF(2); a 128-bit block X followed by F more
// bits contributes X * x^F, and X * x^F mod P can be computed from X's two
// 64-bit halves with one carry-less multiply each by a constant x^n mod P.
// The blocks in flight are folded into one at the end, and its 16 bytes
// (congruent to everything before them) go through the crc32 instruction
// with the tail. In the reflected bit order a carry-less product comes out
// multiplied by x once more, hence the exponents - 1.

// x^n mod P as a 32-bit reflected CRC state (bit i is the coefficient of x^(31-i)):
// start from 1 and multiply by x n times, which is what feeding n zero bits does.
uint32_t XPowModP(size_t n) {
  uint32_t s = 0x80000000u;
  for (size_t i = 0; i < n; ++i) s = (s >> 1) ^ ((s & 1) ? kPoly : 0);
  return s;
}

// The folding constants for a distance of `bits`: the low half multiplies
// X's first (low) 64 bits by x^(bits+64), the high half its last 64 bits by
// x^bits; as 64-bit reflected lanes a 32-bit state sits in the upper half.
struct FoldConstant {
  uint64_t lo;
  uint64_t hi;
};
FoldConstant MakeFold(size_t bits) {
  return {uint64_t{XPowModP(bits + 63)} << 32, uint64_t{XPowModP(bits - 1)} << 32};
}

struct FoldConstants {
  FoldConstant by[4];  // by[i]: a distance of i * 128 bits
};

const FoldConstants& GetFoldConstants() {
  static const FoldConstants constants = [] {
    FoldConstants c{};
    for (size_t i = 1; i < 4; ++i) c.by[i] = MakeFold(128 * i);
    return c;
  }();
  return constants;
}

__attribute__((target("sse4.2,pclmul"))) inline __m128i Fold(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}

__attribute__((target("sse4.2,pclmul"))) inline __m128i Constant(const FoldConstant& c) {
  return _mm_set_epi64x(static_cast<long long>(c.hi), static_cast<long long>(c.lo));
}

// The same folding with AVX-512 VPCLMULQDQ: each 512-bit register holds four
// 128-bit blocks folded in parallel; four registers fold 256 bytes per round.
constexpr size_t kWideRound = 256;

struct WideConstants {
  FoldConstant round;   // 2048 bits: one round
  FoldConstant by[4];   // by[i]: 512 * i bits, to merge the registers
};

const WideConstants& GetWideConstants() {
  static const WideConstants constants = [] {
    WideConstants c{};
    c.round = MakeFold(8 * kWideRound);
    for (size_t i = 1; i < 4; ++i) c.by[i] = MakeFold(512 * i);
    return c;
  }();
  return constants;
}

__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i WideFold(__m512i x, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11),
                                   next, 0x96);  // a ^ b ^ c
}

__attribute__((target("avx512f,vpclmulqdq"))) inline __m512i WideConstant(const FoldConstant& c) {
  return _mm512_set4_epi64(static_cast<long long>(c.hi), static_cast<long long>(c.lo),
                           static_cast<long long>(c.hi), static_cast<long long>(c.lo));
}

__attribute__((target("sse4.2,pclmul,avx512f,vpclmulqdq"))) uint32_t UpdateWide(uint32_t s, const uint8_t* p,
                                                                                 size_t n) {
  if (n < 2 * kWideRound) return UpdateHw(s, p, n);
  const WideConstants& c = GetWideConstants();
  __m512i x0 = _mm512_loadu_si512(p);
  __m512i x1 = _mm512_loadu_si512(p + 64);
  __m512i x2 = _mm512_loadu_si512(p + 128);
  __m512i x3 = _mm512_loadu_si512(p + 192);
  x0 = _mm512_xor_si512(x0, _mm512_maskz_set1_epi32(1, static_cast<int>(s)));  // s in the first 32 bits
  p += kWideRound;
  n -= kWideRound;
  const __m512i round = WideConstant(c.round);
  while (n >= kWideRound) {
    x0 = WideFold(x0, round, _mm512_loadu_si512(p));
    x1 = WideFold(x1, round, _mm512_loadu_si512(p + 64));
    x2 = WideFold(x2, round, _mm512_loadu_si512(p + 128));
    x3 = WideFold(x3, round, _mm512_loadu_si512(p + 192));
    p += kWideRound;
    n -= kWideRound;
  }
  // Registers 0-2 lie 3, 2, 1 registers before the last one.
  __m512i acc = WideFold(x0, WideConstant(c.by[3]), x3);
  acc = WideFold(x1, WideConstant(c.by[2]), acc);
  acc = WideFold(x2, WideConstant(c.by[1]), acc);
  // Its four blocks lie 3, 2, 1 and 0 blocks before the end of the folded data.
  const FoldConstants& narrow = GetFoldConstants();
  alignas(64) uint8_t blocks[64];
  _mm512_store_si512(blocks, acc);
  auto block = [&blocks](int i) { return _mm_load_si128(reinterpret_cast<const __m128i*>(blocks + 16 * i)); };
  __m128i b = block(3);
  b = Fold(block(0), Constant(narrow.by[3]), b);
  b = Fold(block(1), Constant(narrow.by[2]), b);
  b = Fold(block(2), Constant(narrow.by[1]), b);
  const __m128i one = Constant(narrow.by[1]);
  while (n >= 16) {
    b = Fold(b, one, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    p += 16;
    n -= 16;
  }
  alignas(16) uint8_t folded[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(folded), b);
  return UpdateHw1(UpdateHw1(0, folded, 16), p, n);
}

bool HasWide() {
  return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul") &&
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq");
}

#endif

using UpdateFn = uint32_t (*)(uint32_t, const uint8_t*, size_t);

UpdateFn FunctionOf(Crc32cImpl impl) {
  switch (impl) {
#ifdef RS_CRC32C_X86
    case Crc32cImpl::kSse42:
      return __builtin_cpu_supports("sse4.2") ? UpdateHw : nullptr;
    case Crc32cImpl::kAvx512:
      return HasWide() ? UpdateWide : nullptr;
#else
    case Crc32cImpl::kSse42:
    case Crc32cImpl::kAvx512:
      return nullptr;
#endif
    case Crc32cImpl::kPortable:
      return UpdatePortable;
  }
  return nullptr;
}

Crc32cImpl Best() {
#ifdef RS_CRC32C_X86
  __builtin_cpu_init();  // this runs from a static initializer
#endif
  for (Crc32cImpl impl : {Crc32cImpl::kAvx512, Crc32cImpl::kSse42}) {
    if (FunctionOf(impl) != nullptr) return impl;
  }
  return Crc32cImpl::kPortable;
}

const Crc32cImpl kBest = Best();
const UpdateFn kUpdate = FunctionOf(kBest);

}  // namespace

uint32_t Crc32c(const void* data, size_t bytes, uint32_t crc) {
  return ~kUpdate(~crc, static_cast<const uint8_t*>(data), bytes);
}

uint32_t Crc32cPortable(const void* data, size_t bytes, uint32_t crc) {
  return ~UpdatePortable(~crc, static_cast<const uint8_t*>(data), bytes);
}

bool Crc32cAvailable(Crc32cImpl impl) { return FunctionOf(impl) != nullptr; }

uint32_t Crc32cUsing(Crc32cImpl impl, const void* data, size_t bytes, uint32_t crc) {
  const UpdateFn fn = FunctionOf(impl);
  return ~(fn ? fn : UpdatePortable)(~crc, static_cast<const uint8_t*>(data), bytes);
}

const char* Crc32cImplName(Crc32cImpl impl) {
  switch (impl) {
    case Crc32cImpl::kAvx512: return "avx512 vpclmulqdq";
    case Crc32cImpl::kSse42: return "sse4.2 crc32 x3";
    case Crc32cImpl::kPortable: return "table";
  }
  return "?";
}

const char* Crc32cImplementation() { return Crc32cImplName(kBest); }

}  // namespace rs::protocol
