#include "bench/bench_check.h"

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/half.h"

namespace rs::bench {
namespace {

// splitmix64's finalizer: cheap, and every output bit depends on every input bit.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t Hash(const CheckParams& p, uint32_t rank, uint64_t index) {
  return Mix(index * 0x9E3779B97F4A7C15ull + (uint64_t{rank} + 1) * 0xD1B54A32D192ED03ull +
             p.seed * 0x8CB92BA72F3D8DD7ull);
}

// A value in [0, n) from a hash, by multiplying instead of dividing (the
// verification computes world of these per element).
uint64_t Below(uint64_t h, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * n) >> 64);
}

// Buffers are plain bytes from the network; memcpy keeps the accesses legal
// at any alignment and compiles to a single load or store.
template <typename T>
T Load(const void* base, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const std::byte*>(base) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void Store(void* base, size_t i, T v) {
  std::memcpy(static_cast<std::byte*>(base) + i * sizeof(T), &v, sizeof(T));
}

std::string Show(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

template <std::integral T>
std::string Show(T v) {
  return std::to_string(v);
}

// Integers: full-range inputs, so sums and products wrap. Computing in
// uint64_t and truncating gives the two's complement result for every width.
template <typename T>
struct IntCodec {
  using Storage = T;

  static T Input(const CheckParams& p, uint32_t rank, uint64_t i) {
    // Odd factors: a product of a few even ones would mostly wrap to 0, which
    // a reducer that did nothing right could also produce.
    const uint64_t h = Hash(p, rank, i);
    return static_cast<T>(p.op == ReduceOp::kProd ? h | 1 : h);
  }
  static T Decode(T v) { return v; }

  static T Combine(ReduceOp op, T a, T b) {
    switch (op) {
      case ReduceOp::kSum: return static_cast<T>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
      case ReduceOp::kProd: return static_cast<T>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
      case ReduceOp::kMax: return std::max(a, b);
      case ReduceOp::kMin: return std::min(a, b);
    }
    return a;
  }

  static T Expected(const CheckParams& p, uint64_t i) {
    T acc = Input(p, 0, i);
    for (uint32_t r = 1; r < p.world; ++r) acc = Combine(p.op, acc, Input(p, r, i));
    return acc;
  }
};

// A floating-point test value m * 2^e. Inputs and exact results both have
// this form, so the expected result is computed in integers, not in floats.
struct Scaled {
  int64_t m = 0;
  int e = 0;
};

// m * 2^e for the exponents used here (well inside float64's normal range);
// building 2^e from its bits is several times faster than std::ldexp.
double ScaledValue(int64_t m, int e) {
  return static_cast<double>(m) * std::bit_cast<double>(static_cast<uint64_t>(1023 + e) << 52);
}

// Formats: significand bits (with the implicit one) and the largest binade.
struct Float16 {
  using Storage = uint16_t;
  static constexpr int kDigits = 11;
  static constexpr int kMaxExp = 15;
  static Storage Encode(double v) { return FloatToHalf(static_cast<float>(v)); }
  static double Decode(Storage s) { return HalfToFloat(s); }
};
struct Bfloat16 {
  using Storage = uint16_t;
  static constexpr int kDigits = 8;
  static constexpr int kMaxExp = 127;
  static Storage Encode(double v) { return FloatToBfloat16(static_cast<float>(v)); }
  static double Decode(Storage s) { return Bfloat16ToFloat(s); }
};
struct Float32 {
  using Storage = float;
  static constexpr int kDigits = 24;
  static constexpr int kMaxExp = 127;
  static Storage Encode(double v) { return static_cast<float>(v); }
  static double Decode(Storage s) { return s; }
};
struct Float64 {
  using Storage = double;
  static constexpr int kDigits = 53;
  static constexpr int kMaxExp = 1023;
  static Storage Encode(double v) { return v; }
  static double Decode(Storage s) { return s; }
};

template <typename Format>
struct FloatCodec {
  using Storage = typename Format::Storage;

  static Scaled Term(const CheckParams& p, uint32_t rank, uint64_t i) {
    const uint64_t h = Hash(p, rank, i);
    const auto world = static_cast<int64_t>(p.world);
    if (p.op == ReduceOp::kProd) {
      // +-2^e, |e| <= span: world factors stay inside the normal range.
      const int span = static_cast<int>(std::clamp<int64_t>((Format::kMaxExp - 1) / world, 0, 2));
      return {(h & 1) ? -1 : 1, static_cast<int>(Below(h, 2 * span + 1)) - span};
    }
    // |m| <= 2^digits / world keeps any sum of world terms exact. The scale
    // depends on the element only, so every rank uses the same one.
    const int64_t k = std::max<int64_t>(1, (int64_t{1} << Format::kDigits) / world);
    return {static_cast<int64_t>(Below(h, static_cast<uint64_t>(2 * k + 1))) - k,
            static_cast<int>((i + p.seed) % 8) - 4};
  }

  static Storage Input(const CheckParams& p, uint32_t rank, uint64_t i) {
    const Scaled t = Term(p, rank, i);
    return Format::Encode(ScaledValue(t.m, t.e));
  }
  static double Decode(Storage v) { return Format::Decode(v); }

  static double Expected(const CheckParams& p, uint64_t i) {
    Scaled acc = Term(p, 0, i);
    for (uint32_t r = 1; r < p.world; ++r) {
      const Scaled t = Term(p, r, i);
      switch (p.op) {
        case ReduceOp::kSum: acc.m += t.m; break;  // same scale on every rank
        case ReduceOp::kProd: acc.m *= t.m; acc.e += t.e; break;
        case ReduceOp::kMax: acc.m = std::max(acc.m, t.m); break;
        case ReduceOp::kMin: acc.m = std::min(acc.m, t.m); break;
      }
    }
    return ScaledValue(acc.m, acc.e);
  }
};

// The one switch over data types; fn receives a codec object by value.
template <typename Fn>
auto WithCodec(DataType type, Fn&& fn) {
  switch (type) {
    case DataType::kInt8: return fn(IntCodec<int8_t>{});
    case DataType::kUint8: return fn(IntCodec<uint8_t>{});
    case DataType::kInt32: return fn(IntCodec<int32_t>{});
    case DataType::kUint32: return fn(IntCodec<uint32_t>{});
    case DataType::kInt64: return fn(IntCodec<int64_t>{});
    case DataType::kUint64: return fn(IntCodec<uint64_t>{});
    case DataType::kFloat16: return fn(FloatCodec<Float16>{});
    case DataType::kFloat32: return fn(FloatCodec<Float32>{});
    case DataType::kFloat64: return fn(FloatCodec<Float64>{});
    case DataType::kBfloat16: return fn(FloatCodec<Bfloat16>{});
  }
  std::abort();  // DataType values are validated where they are parsed
}

}  // namespace

void FillInput(const CheckParams& params, uint32_t rank, void* out, size_t count) {
  WithCodec(params.dtype, [&](auto codec) {
    using Codec = decltype(codec);
    for (size_t i = 0; i < count; ++i) Store(out, i, Codec::Input(params, rank, i));
  });
}

namespace {

// What the wire carries of x where it can, x where it cannot.
float OnWire(DataType wire, float x) {
  if (wire == DataType::kFloat16) {
    const uint16_t h = FloatToHalf(x);
    return (h & 0x7C00) == 0x7C00 ? x : HalfToFloat(h);
  }
  const uint16_t b = FloatToBfloat16(x);
  return (b & 0x7F80) == 0x7F80 ? x : Bfloat16ToFloat(b);
}

CheckResult VerifyWireSum(const CheckParams& params, const void* result, size_t count) {
  using Codec = FloatCodec<Float32>;
  CheckResult out;
  for (size_t i = 0; i < count; ++i) {
    float sum = OnWire(params.wire, Codec::Input(params, 0, i));
    for (uint32_t r = 1; r < params.world; ++r) sum += OnWire(params.wire, Codec::Input(params, r, i));
    const float expected = OnWire(params.wire, sum);
    const float actual = Load<float>(result, i);
    if (std::bit_cast<uint32_t>(actual) == std::bit_cast<uint32_t>(expected)) continue;
    if (out.wrong++ == 0) {
      out.first_wrong = "element " + std::to_string(i) + " is " + Show(double{actual}) + ", expected " +
                        Show(double{expected}) + " (float32 sum on a " +
                        std::string(DataTypeName(params.wire)) + " wire)";
    }
  }
  return out;
}

}  // namespace

CheckResult VerifyResult(const CheckParams& params, const void* result, size_t count) {
  if (params.wire != DataType::kFloat32 && params.dtype == DataType::kFloat32 && params.op == ReduceOp::kSum) {
    return VerifyWireSum(params, result, count);
  }
  return WithCodec(params.dtype, [&](auto codec) {
    using Codec = decltype(codec);
    CheckResult out;
    for (size_t i = 0; i < count; ++i) {
      const auto actual = Codec::Decode(Load<typename Codec::Storage>(result, i));
      const auto expected = Codec::Expected(params, i);
      if (actual == expected) continue;
      if (out.wrong++ == 0) {
        out.first_wrong = "element " + std::to_string(i) + " is " + Show(actual) + ", expected " + Show(expected);
      }
    }
    return out;
  });
}

}  // namespace rs::bench
