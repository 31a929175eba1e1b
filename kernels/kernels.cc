// Reduction kernels (see kernels.h), compiled once per SIMD target by
// Highway's foreach_target.h and dispatched at run time.
//
// Layout of the work: the element range is cut into chunks of kChunkBytes of
// accumulator; within a chunk the inputs are consumed in groups of kGroup, so
// at most kGroup + 2 memory streams are live at once however many inputs
// there are. The running result of a chunk is kept in an L1-resident buffer
// between groups (in float32 for float16/bfloat16, so they round only once).
// With N <= kGroup inputs, each input is read once and out written once.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/kernels.cc"
#include "kernels/kernels.h"

#include "common/half.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

HWY_BEFORE_NAMESPACE();
namespace rs::kernels {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Highway 1.0.3 converts float16 with F16C (round-to-nearest-even) only on
// AVX2/AVX3; its fallback truncates and turns Inf/NaN into finite values, so
// other targets use the integer code below.
#if (HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && \
    !defined(HWY_DISABLE_F16C)
constexpr bool kNativeF16 = true;
#else
constexpr bool kNativeF16 = false;
#endif

// Enough inputs to amortise each pass over the accumulator buffer, few enough
// streams for the hardware prefetchers to track.
constexpr size_t kGroup = 8;
// The accumulator buffer (on the stack) stays in L1/L2, yet each group reads
// several pages of every input before the next group takes over: with 8 KiB
// the prefetchers kept restarting and 16 inputs ran ~25% slower.
constexpr size_t kChunkBytes = 32768;

// ---------------------------------------------------------------- conversions
// Scalar twins of these live in half.h; the tests hold both to the same
// results.

template <class DF>
HWY_INLINE hn::Vec<DF> HalfBitsToFloat(DF df, hn::Vec<hn::RebindToUnsigned<DF>> h) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
  const auto magnitude = hn::And(h, hn::Set(du, 0x7FFFu));
  const auto exp = hn::ShiftRight<10>(magnitude);
  const auto shifted = hn::ShiftLeft<13>(magnitude);
  const auto normal = hn::Add(shifted, hn::Set(du, (127u - 15u) << 23));
  const auto inf_nan = hn::Or(shifted, hn::Set(du, 0x7F800000u));
  // mantissa * 2^-24 is exact and a normal float32, so DAZ cannot zero it.
  const auto subnormal = hn::BitCast(
      du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, magnitude)), hn::Set(df, 0x1p-24f)));
  auto bits = hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), subnormal, normal);
  bits = hn::IfThenElse(hn::Eq(exp, hn::Set(du, 31u)), inf_nan, bits);
  return hn::BitCast(df, hn::Or(bits, sign));
}

// Returns float16 bit patterns in the low half of 32-bit lanes.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> FloatToHalfBits(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto bits = hn::BitCast(du, v);
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 0x8000u));
  const auto abs = hn::And(bits, hn::Set(du, 0x7FFFFFFFu));
  const auto abs_i = hn::BitCast(di, abs);  // < 2^31, so signed compares work
  const auto nan =
      hn::Or(hn::Set(du, 0x7E00u), hn::And(hn::ShiftRight<13>(abs), hn::Set(du, 0x3FFu)));
  // Subnormal results: adding 0.5 (ulp 2^-24) makes the FPU round for us.
  const auto subnormal = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, abs), hn::Set(df, 0.5f))),
                                 hn::Set(du, 0x3F000000u));
  const auto rebiased = hn::Sub(abs, hn::Set(du, (127u - 15u) << 23));
  const auto odd = hn::And(hn::ShiftRight<13>(abs), hn::Set(du, 1u));
  const auto normal = hn::ShiftRight<13>(hn::Add(hn::Add(rebiased, hn::Set(du, 0xFFFu)), odd));
  auto h = hn::IfThenElse(hn::RebindMask(du, abs_i < hn::Set(di, 0x38800000)), subnormal, normal);
  h = hn::IfThenElse(hn::RebindMask(du, abs_i > hn::Set(di, 0x477FFFFF)), hn::Set(du, 0x7C00u), h);
  h = hn::IfThenElse(hn::RebindMask(du, abs_i > hn::Set(di, 0x7F800000)), nan, h);
  return hn::Or(h, sign);
}

// Returns bfloat16 bit patterns in the low half of 32-bit lanes. Highway
// 1.0.3's DemoteTo truncates, so the rounding is done here.
template <class DF>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> FloatToBfloat16Bits(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::BitCast(du, v);
  const auto upper = hn::ShiftRight<16>(bits);
  const auto rounded = hn::ShiftRight<16>(
      hn::Add(hn::Add(bits, hn::Set(du, 0x7FFFu)), hn::And(upper, hn::Set(du, 1u))));
  // The rounding add would carry a NaN's payload into Inf; quieten instead.
  const auto quiet_nan = hn::Or(upper, hn::Set(du, 0x40u));
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet_nan, rounded);
}

// ------------------------------------------------- element loads and stores
// An Io type names the stored element type S and the lane type A the
// arithmetic runs in. It moves one register's worth (Reg: a vector of A, or
// a pair of them) of Step(d) elements between memory and registers, to and
// from the accumulator buffer (which holds A), and applies an Op to it.

// Reg is a single vector of A.
struct SingleReg {
  template <class D>
  static size_t Step(D d) {
    return hn::Lanes(d);
  }
  template <class D, typename A>
  static HWY_INLINE hn::Vec<D> LoadAcc(D d, const A* p) {
    return hn::LoadU(d, p);
  }
  template <class D, typename A>
  static HWY_INLINE void StoreAcc(D d, hn::Vec<D> v, A* p) {
    hn::StoreU(v, d, p);
  }
  template <class Op, class V>
  static HWY_INLINE V Apply(V a, V b) {
    return Op::Apply(a, b);
  }
};

template <typename T>
struct PlainIo : SingleReg {
  using S = T;
  using A = T;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const S* p) {
    return hn::LoadU(d, p);
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, S* p) {
    hn::StoreU(v, d, p);
  }
};

struct HalfIo : SingleReg {
  using S = uint16_t;
  using A = float;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const S* p) {
    const hn::Rebind<uint16_t, D> d16;
    if constexpr (kNativeF16) {
      const hn::Rebind<hwy::float16_t, D> dh;
      return hn::PromoteTo(d, hn::BitCast(dh, hn::LoadU(d16, p)));
    } else {
      const hn::RebindToUnsigned<D> du;
      return HalfBitsToFloat(d, hn::PromoteTo(du, hn::LoadU(d16, p)));
    }
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, S* p) {
    const hn::Rebind<uint16_t, D> d16;
    if constexpr (kNativeF16) {
      const hn::Rebind<hwy::float16_t, D> dh;
      hn::StoreU(hn::BitCast(d16, hn::DemoteTo(dh, v)), d16, p);
    } else {
      const hn::RebindToSigned<D> di;
      hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, FloatToHalfBits(d, v))), d16, p);
    }
  }
};

// A bfloat16 is the upper half of a float32, so a vector of 32-bit lanes
// holding two elements each widens without shuffles: the element in the low
// half shifted up, the one in the high half masked. Both halves go back to
// where they came from, so element order never changes.
struct Bfloat16Io {
  using S = uint16_t;
  using A = float;
  template <class V>
  struct Pair {
    V low, high;
  };
  template <class D>
  static size_t Step(D d) {
    return 2 * hn::Lanes(d);
  }
  template <class D>
  static HWY_INLINE Pair<hn::Vec<D>> Load(D d, const S* p) {
    const hn::RebindToUnsigned<D> du;
    const auto both = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
    return {hn::BitCast(d, hn::ShiftLeft<16>(both)),
            hn::BitCast(d, hn::And(both, hn::Set(du, 0xFFFF0000u)))};
  }
  template <class D>
  static HWY_INLINE void Store(D d, Pair<hn::Vec<D>> v, S* p) {
    const hn::RebindToUnsigned<D> du;
    const auto both =
        hn::Or(FloatToBfloat16Bits(d, v.low), hn::ShiftLeft<16>(FloatToBfloat16Bits(d, v.high)));
    hn::StoreU(both, du, reinterpret_cast<uint32_t*>(p));
  }
  template <class D>
  static HWY_INLINE Pair<hn::Vec<D>> LoadAcc(D d, const A* p) {
    return {hn::LoadU(d, p), hn::LoadU(d, p + hn::Lanes(d))};
  }
  template <class D>
  static HWY_INLINE void StoreAcc(D d, Pair<hn::Vec<D>> v, A* p) {
    hn::StoreU(v.low, d, p);
    hn::StoreU(v.high, d, p + hn::Lanes(d));
  }
  template <class Op, class V>
  static HWY_INLINE Pair<V> Apply(Pair<V> a, Pair<V> b) {
    return {Op::Apply(a.low, b.low), Op::Apply(a.high, b.high)};
  }
};

// ------------------------------------------------------------- operations

// x86 has no 8-bit multiply. In 16-bit lanes the low byte of a*b depends only
// on the low bytes, and (a >> 8) * (b & 0xFF00) leaves the high bytes'
// product, mod 256, in the high byte.
template <class V>
HWY_INLINE V MulBytes(V a, V b) {
  const hn::DFromV<V> d8;
  const hn::Repartition<uint16_t, decltype(d8)> d16;
  const auto a16 = hn::BitCast(d16, a);
  const auto b16 = hn::BitCast(d16, b);
  const auto low = hn::And(hn::Mul(a16, b16), hn::Set(d16, uint16_t{0x00FF}));
  const auto high = hn::Mul(hn::ShiftRight<8>(a16), hn::And(b16, hn::Set(d16, uint16_t{0xFF00})));
  return hn::BitCast(d8, hn::Or(low, high));
}

// Integer sum and prod run on unsigned lanes (see ByOp), so they wrap.
struct SumOp {
  template <class V>
  static HWY_INLINE V Apply(V a, V b) {
    return hn::Add(a, b);
  }
};

struct ProdOp {
  template <class V>
  static HWY_INLINE V Apply(V a, V b) {
    if constexpr (sizeof(hn::TFromV<V>) == 1 && HWY_TARGET != HWY_SCALAR) {
      return MulBytes(a, b);  // HWY_SCALAR multiplies bytes natively
    } else {
      return hn::Mul(a, b);  // Highway emulates 64-bit where there is no vpmullq
    }
  }
};

// Floats: b replaces a only if strictly better or NaN, so ties (including
// -0 vs +0) keep the earlier input and a NaN on either side wins. Both are
// spelled out because the native min/max instructions differ between ISAs.
struct MaxOp {
  template <class V>
  static HWY_INLINE V Apply(V a, V b) {
    if constexpr (hwy::IsFloat<hn::TFromV<V>>()) {
      return hn::IfThenElse(hn::Or(a < b, hn::IsNaN(b)), b, a);
    } else {
      return hn::Max(a, b);
    }
  }
};

struct MinOp {
  template <class V>
  static HWY_INLINE V Apply(V a, V b) {
    if constexpr (hwy::IsFloat<hn::TFromV<V>>()) {
      return hn::IfThenElse(hn::Or(b < a, hn::IsNaN(b)), b, a);
    } else {
      return hn::Min(a, b);
    }
  }
};

// ------------------------------------------------------------------ kernel

// One pass over `len` elements of a chunk: starts from in[0] (or, when
// kFromBuf, from the buffer), combines the remaining inputs of the group in
// order and writes to out (or, when kToBuf, back to the buffer). buf has
// room for one register past `len`, so it needs no tail handling.
template <class Io, class Op, bool kFromBuf, bool kToBuf>
HWY_NOINLINE void Pass(const typename Io::S* const* in, size_t n_in, typename Io::A* buf,
                       typename Io::S* out, size_t len) {
  using S = typename Io::S;
  const hn::ScalableTag<typename Io::A> d;
  const size_t step = Io::Step(d);
  const size_t k_first = kFromBuf ? 0 : 1;
  const auto start = [&](size_t i) HWY_ATTR {
    if constexpr (kFromBuf) {
      return Io::LoadAcc(d, buf + i);
    } else {
      return Io::Load(d, in[0] + i);
    }
  };
  const auto finish = [&](size_t i, auto v) HWY_ATTR {
    if constexpr (kToBuf) {
      Io::StoreAcc(d, v, buf + i);
    } else {
      Io::Store(d, v, out + i);
    }
  };
  size_t i = 0;
  for (; i + 4 * step <= len; i += 4 * step) {
    auto v0 = start(i);
    auto v1 = start(i + step);
    auto v2 = start(i + 2 * step);
    auto v3 = start(i + 3 * step);
    for (size_t k = k_first; k < n_in; ++k) {
      const S* p = in[k] + i;
      v0 = Io::template Apply<Op>(v0, Io::Load(d, p));
      v1 = Io::template Apply<Op>(v1, Io::Load(d, p + step));
      v2 = Io::template Apply<Op>(v2, Io::Load(d, p + 2 * step));
      v3 = Io::template Apply<Op>(v3, Io::Load(d, p + 3 * step));
    }
    finish(i, v0);
    finish(i + step, v1);
    finish(i + 2 * step, v2);
    finish(i + 3 * step, v3);
  }
  for (; i + step <= len; i += step) {
    auto v = start(i);
    for (size_t k = k_first; k < n_in; ++k) v = Io::template Apply<Op>(v, Io::Load(d, in[k] + i));
    finish(i, v);
  }
  if (i == len) return;
  // The last partial register goes through a padded copy, so it is computed
  // by exactly the same instructions as the rest (no scalar twin to keep in
  // step). Stale lanes from earlier inputs are harmless: nothing traps.
  const size_t rest = len - i;
  alignas(64) S tmp[HWY_MAX_BYTES / sizeof(S)] = {};
  auto v = [&]() HWY_ATTR {
    if constexpr (kFromBuf) {
      return Io::LoadAcc(d, buf + i);
    } else {
      std::memcpy(tmp, in[0] + i, rest * sizeof(S));
      return Io::Load(d, tmp);
    }
  }();
  for (size_t k = k_first; k < n_in; ++k) {
    std::memcpy(tmp, in[k] + i, rest * sizeof(S));
    v = Io::template Apply<Op>(v, Io::Load(d, tmp));
  }
  if constexpr (kToBuf) {
    Io::StoreAcc(d, v, buf + i);
  } else {
    Io::Store(d, v, tmp);
    std::memcpy(out + i, tmp, rest * sizeof(S));
  }
}

template <class Io, class Op>
void ReduceKernel(void* out_bytes, const void* const* inputs, size_t n_inputs, size_t count) {
  using S = typename Io::S;
  using A = typename Io::A;
  constexpr size_t kChunk = kChunkBytes / sizeof(A);
  // Room for one register (up to HWY_MAX_BYTES of S, widened to A) past the end.
  alignas(64) A buf[kChunk + HWY_MAX_BYTES / sizeof(S)];
  S* out = static_cast<S*>(out_bytes);
  const S* group[kGroup];
  for (size_t pos = 0; pos < count; pos += kChunk) {
    const size_t len = std::min(kChunk, count - pos);
    // Inputs are taken strictly in order; out is written only by the last
    // group, after every read of inputs[0] in this chunk (out may alias it).
    for (size_t k = 0; k < n_inputs;) {
      const size_t n_in = std::min(kGroup, n_inputs - k);
      for (size_t j = 0; j < n_in; ++j) group[j] = static_cast<const S*>(inputs[k + j]) + pos;
      const bool first = k == 0;
      k += n_in;
      const bool last = k == n_inputs;
      if (first && last) {
        Pass<Io, Op, false, false>(group, n_in, buf, out + pos, len);
      } else if (first) {
        Pass<Io, Op, false, true>(group, n_in, buf, out + pos, len);
      } else if (last) {
        Pass<Io, Op, true, false>(group, n_in, buf, out + pos, len);
      } else {
        Pass<Io, Op, true, true>(group, n_in, buf, out + pos, len);
      }
    }
  }
}

// ArithIo serves sum and prod (unsigned lanes for integers, so they wrap
// without undefined behaviour), OrderIo serves max and min.
template <class ArithIo, class OrderIo>
void ByOp(ReduceOp op, void* out, const void* const* inputs, size_t n, size_t count) {
  switch (op) {
    case ReduceOp::kSum:
      return ReduceKernel<ArithIo, SumOp>(out, inputs, n, count);
    case ReduceOp::kProd:
      return ReduceKernel<ArithIo, ProdOp>(out, inputs, n, count);
    case ReduceOp::kMax:
      return ReduceKernel<OrderIo, MaxOp>(out, inputs, n, count);
    case ReduceOp::kMin:
      return ReduceKernel<OrderIo, MinOp>(out, inputs, n, count);
  }
}

void ReduceImpl(DataType type, ReduceOp op, void* out, const void* const* inputs, size_t n,
                size_t count) {
  switch (type) {
    case DataType::kInt8:
      return ByOp<PlainIo<uint8_t>, PlainIo<int8_t>>(op, out, inputs, n, count);
    case DataType::kUint8:
      return ByOp<PlainIo<uint8_t>, PlainIo<uint8_t>>(op, out, inputs, n, count);
    case DataType::kInt32:
      return ByOp<PlainIo<uint32_t>, PlainIo<int32_t>>(op, out, inputs, n, count);
    case DataType::kUint32:
      return ByOp<PlainIo<uint32_t>, PlainIo<uint32_t>>(op, out, inputs, n, count);
    case DataType::kInt64:
      return ByOp<PlainIo<uint64_t>, PlainIo<int64_t>>(op, out, inputs, n, count);
    case DataType::kUint64:
      return ByOp<PlainIo<uint64_t>, PlainIo<uint64_t>>(op, out, inputs, n, count);
    case DataType::kFloat16:
      return ByOp<HalfIo, HalfIo>(op, out, inputs, n, count);
    case DataType::kFloat32:
      return ByOp<PlainIo<float>, PlainIo<float>>(op, out, inputs, n, count);
    case DataType::kFloat64:
      return ByOp<PlainIo<double>, PlainIo<double>>(op, out, inputs, n, count);
    case DataType::kBfloat16:
      return ByOp<Bfloat16Io, Bfloat16Io>(op, out, inputs, n, count);
  }
}

// ------------------------------------------------- wire format conversions
// Float32 sums on a 16-bit wire (kernels.h). Work goes chunk by chunk so that
// a sum's float32 output stays in cache while every input is added to it.

enum class Conv { kNarrow, kWiden, kAdd };

// Bfloat16Io keeps its accumulator de-interleaved (low halves, then high
// halves); conversions to and from plain float32 arrays need element order,
// so they widen and narrow lane by lane like HalfIo.
struct Bfloat16LinearIo : SingleReg {
  using S = uint16_t;
  using A = float;
  template <class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const S* p) {
    const hn::Rebind<uint16_t, D> d16;
    const hn::RebindToUnsigned<D> du;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
  }
  template <class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, S* p) {
    const hn::Rebind<uint16_t, D> d16;
    const hn::RebindToSigned<D> di;
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, FloatToBfloat16Bits(d, v))), d16, p);
  }
};

// One chunk: kNarrow stores Io::S from float32, kWiden stores float32 from
// Io::S, kAdd adds Io::S (widened) into float32. Like Pass, the partial last
// register goes through padded copies so it runs the same instructions.
template <class Io, Conv kConv>
HWY_NOINLINE void ConvertChunk(const void* in_bytes, void* out_bytes, size_t len) {
  using In = std::conditional_t<kConv == Conv::kNarrow, float, typename Io::S>;
  using Out = std::conditional_t<kConv == Conv::kNarrow, typename Io::S, float>;
  const hn::ScalableTag<float> d;
  const In* in = static_cast<const In*>(in_bytes);
  Out* out = static_cast<Out*>(out_bytes);
  const auto one = [&](const In* src, Out* dst) HWY_ATTR {
    if constexpr (kConv == Conv::kNarrow) {
      Io::Store(d, Io::LoadAcc(d, src), dst);
    } else if constexpr (kConv == Conv::kWiden) {
      Io::StoreAcc(d, Io::Load(d, src), dst);
    } else {
      Io::StoreAcc(d, Io::template Apply<SumOp>(Io::LoadAcc(d, dst), Io::Load(d, src)), dst);
    }
  };
  const size_t step = Io::Step(d);
  size_t i = 0;
  for (; i + step <= len; i += step) one(in + i, out + i);
  if (i == len) return;
  constexpr size_t kPad = HWY_MAX_BYTES / sizeof(float);  // Step: one register of float32
  alignas(64) In tmp_in[kPad] = {};
  alignas(64) Out tmp_out[kPad] = {};
  const size_t rest = len - i;
  std::memcpy(tmp_in, in + i, rest * sizeof(In));
  if constexpr (kConv == Conv::kAdd) std::memcpy(tmp_out, out + i, rest * sizeof(Out));
  one(tmp_in, tmp_out);
  std::memcpy(out + i, tmp_out, rest * sizeof(Out));
}

// Whether no element has every exponent bit set (Inf or NaN).
HWY_NOINLINE bool NoneAllOnes(const uint16_t* p, size_t count, uint16_t exponent) {
  const hn::ScalableTag<uint16_t> d;
  const auto mask = hn::Set(d, exponent);
  auto seen = hn::Zero(d);
  const size_t step = hn::Lanes(d);
  size_t i = 0;
  for (; i + step <= count; i += step) {
    seen = hn::Or(seen, hn::VecFromMask(d, hn::Eq(hn::And(hn::LoadU(d, p + i), mask), mask)));
  }
  if (!hn::AllFalse(d, hn::Ne(seen, hn::Zero(d)))) return false;
  for (; i < count; ++i) {
    if ((p[i] & exponent) == exponent) return false;
  }
  return true;
}

constexpr size_t kConvChunk = kChunkBytes / sizeof(float);

template <class Io>
bool Narrow(const float* in, uint16_t* out, size_t count, uint16_t exponent) {
  for (size_t pos = 0; pos < count; pos += kConvChunk) {
    ConvertChunk<Io, Conv::kNarrow>(in + pos, out + pos, std::min(kConvChunk, count - pos));
  }
  return NoneAllOnes(out, count, exponent);
}

bool NarrowImpl(DataType wire, const float* in, uint16_t* out, size_t count) {
  return wire == DataType::kFloat16 ? Narrow<HalfIo>(in, out, count, 0x7C00)
                                    : Narrow<Bfloat16LinearIo>(in, out, count, 0x7F80);
}

bool AllFiniteImpl(DataType wire, const uint16_t* values, size_t count) {
  return NoneAllOnes(values, count, wire == DataType::kFloat16 ? 0x7C00 : 0x7F80);
}

void WidenImpl(DataType wire, const uint16_t* in, float* out, size_t count) {
  for (size_t pos = 0; pos < count; pos += kConvChunk) {
    const size_t len = std::min(kConvChunk, count - pos);
    if (wire == DataType::kFloat16) {
      ConvertChunk<HalfIo, Conv::kWiden>(in + pos, out + pos, len);
    } else {
      ConvertChunk<Bfloat16LinearIo, Conv::kWiden>(in + pos, out + pos, len);
    }
  }
}

void SumImpl(DataType wire, float* out, const void* const* inputs, const DataType* types, size_t n,
             size_t count) {
  for (size_t pos = 0; pos < count; pos += kConvChunk) {
    const size_t len = std::min(kConvChunk, count - pos);
    for (size_t k = 0; k < n; ++k) {
      const bool f32 = types[k] == DataType::kFloat32;
      const auto* base = static_cast<const uint8_t*>(inputs[k]);
      const void* in = base + pos * (f32 ? sizeof(float) : sizeof(uint16_t));
      if (k == 0 && f32) {
        if (in != out + pos) std::memcpy(out + pos, in, len * sizeof(float));
      } else if (k == 0) {
        WidenImpl(wire, static_cast<const uint16_t*>(in), out + pos, len);
      } else if (f32) {
        ConvertChunk<PlainIo<float>, Conv::kAdd>(in, out + pos, len);
      } else if (wire == DataType::kFloat16) {
        ConvertChunk<HalfIo, Conv::kAdd>(in, out + pos, len);
      } else {
        ConvertChunk<Bfloat16LinearIo, Conv::kAdd>(in, out + pos, len);
      }
    }
  }
}

int64_t CompiledTarget() { return HWY_TARGET; }

}  // namespace HWY_NAMESPACE
}  // namespace rs::kernels
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace rs::kernels {
namespace {

// Local rather than DataTypeSize(): rs_kernels is linked below rs_core.
size_t ElementSize(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kUint8:
      return 1;
    case DataType::kFloat16:
    case DataType::kBfloat16:
      return 2;
    case DataType::kInt32:
    case DataType::kUint32:
    case DataType::kFloat32:
      return 4;
    case DataType::kInt64:
    case DataType::kUint64:
    case DataType::kFloat64:
      return 8;
  }
  return 0;
}

}  // namespace

HWY_EXPORT(ReduceImpl);
HWY_EXPORT(CompiledTarget);

void Reduce(DataType type, ReduceOp op, void* out, const void* const* inputs, size_t n_inputs,
            size_t count) {
  if (count == 0 || n_inputs == 0) return;
  if (n_inputs == 1) {
    // A plain copy keeps every bit, signalling NaN payloads included.
    if (out != inputs[0]) std::memcpy(out, inputs[0], count * ElementSize(type));
    return;
  }
  HWY_DYNAMIC_DISPATCH(ReduceImpl)(type, op, out, inputs, n_inputs, count);
}

const char* ReduceTargetName() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(CompiledTarget)()); }

namespace {

// A caller passing another type has a bug no input could cause: stop loudly.
void CheckWireType(DataType wire) {
  if (wire != DataType::kFloat16 && wire != DataType::kBfloat16) {
    std::fprintf(stderr, "rs::kernels: wire type %d is neither float16 nor bfloat16\n",
                 static_cast<int>(wire));
    std::abort();
  }
}

}  // namespace

HWY_EXPORT(NarrowImpl);
HWY_EXPORT(WidenImpl);
HWY_EXPORT(AllFiniteImpl);

bool AllFinite(DataType wire, const uint16_t* values, size_t count) {
  CheckWireType(wire);
  if (count == 0) return true;
  return HWY_DYNAMIC_DISPATCH(AllFiniteImpl)(wire, values, count);
}
HWY_EXPORT(SumImpl);

void WidenWhereFinite(DataType wire, const uint16_t* narrowed, float* values, size_t count) {
  CheckWireType(wire);
  const bool half = wire == DataType::kFloat16;
  const uint16_t exponent = half ? 0x7C00 : 0x7F80;
  for (size_t i = 0; i < count; ++i) {
    if ((narrowed[i] & exponent) != exponent) values[i] = half ? HalfToFloat(narrowed[i]) : Bfloat16ToFloat(narrowed[i]);
  }
}

bool NarrowFloat32(DataType wire, const float* in, uint16_t* out, size_t count) {
  CheckWireType(wire);
  if (count == 0) return true;
  return HWY_DYNAMIC_DISPATCH(NarrowImpl)(wire, in, out, count);
}

void WidenToFloat32(DataType wire, const uint16_t* in, float* out, size_t count) {
  CheckWireType(wire);
  if (count == 0) return;
  HWY_DYNAMIC_DISPATCH(WidenImpl)(wire, in, out, count);
}

void SumToFloat32(DataType wire, float* out, const void* const* inputs,
                  const DataType* input_types, size_t n_inputs, size_t count) {
  CheckWireType(wire);
  if (count == 0 || n_inputs == 0) return;
  HWY_DYNAMIC_DISPATCH(SumImpl)(wire, out, inputs, input_types, n_inputs, count);
}

}  // namespace rs::kernels
#endif  // HWY_ONCE
