// Tests for rs::Reduce and the half.h conversions. Every dtype x op is checked
// element by element against a scalar reference that combines the inputs in
// the same left-to-right order, on every SIMD target this CPU runs (the
// results must be bitwise identical whatever the vector width).
#include "kernels/kernels.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/half.h"
#include "tests/support/simd_target_scope.h"

namespace rs::kernels {
namespace {

constexpr DataType kAllTypes[] = {DataType::kInt8,    DataType::kUint8,   DataType::kInt32,
                                  DataType::kUint32,  DataType::kInt64,   DataType::kUint64,
                                  DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                                  DataType::kBfloat16};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMax, ReduceOp::kMin};

std::string Describe(DataType type, ReduceOp op) {
  return std::string(DataTypeName(type)) + " " + std::string(ReduceOpName(op)) + " on " +
         ReduceTargetName();
}

bool IsFloat(DataType type) {
  return type == DataType::kFloat16 || type == DataType::kFloat32 || type == DataType::kFloat64 ||
         type == DataType::kBfloat16;
}

bool IsNaNBits(DataType type, uint64_t bits) {
  switch (type) {
    case DataType::kFloat16:
      return (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0;
    case DataType::kBfloat16:
      return std::isnan(Bfloat16ToFloat(static_cast<uint16_t>(bits)));
    case DataType::kFloat32:
      return std::isnan(std::bit_cast<float>(static_cast<uint32_t>(bits)));
    case DataType::kFloat64:
      return std::isnan(std::bit_cast<double>(bits));
    default:
      return false;
  }
}

uint64_t Mask(DataType type) {
  const size_t bits = 8 * DataTypeSize(type);
  return bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
}

// ------------------------------------------------------------- reference

template <typename F>
F CombineFloat(ReduceOp op, F a, F b) {
  switch (op) {
    case ReduceOp::kSum:
      return a + b;
    case ReduceOp::kProd:
      return a * b;
    case ReduceOp::kMax:
      return (a < b || std::isnan(b)) ? b : a;
    case ReduceOp::kMin:
      return (b < a || std::isnan(b)) ? b : a;
  }
  return a;
}

uint64_t CombineInt(DataType type, ReduceOp op, uint64_t a, uint64_t b) {
  // Comparing with the sign bit flipped orders signed values as unsigned.
  const bool is_signed =
      type == DataType::kInt8 || type == DataType::kInt32 || type == DataType::kInt64;
  const uint64_t flip = is_signed ? (Mask(type) >> 1) + 1 : 0;
  switch (op) {
    case ReduceOp::kSum:
      return (a + b) & Mask(type);
    case ReduceOp::kProd:
      return (a * b) & Mask(type);
    case ReduceOp::kMax:
      return (b ^ flip) > (a ^ flip) ? b : a;
    case ReduceOp::kMin:
      return (b ^ flip) < (a ^ flip) ? b : a;
  }
  return a;
}

// Element bit patterns of the inputs, first input first.
uint64_t Reference(DataType type, ReduceOp op, const std::vector<uint64_t>& column) {
  switch (type) {
    case DataType::kFloat32: {
      float acc = std::bit_cast<float>(static_cast<uint32_t>(column[0]));
      for (size_t k = 1; k < column.size(); ++k) {
        acc = CombineFloat(op, acc, std::bit_cast<float>(static_cast<uint32_t>(column[k])));
      }
      return std::bit_cast<uint32_t>(acc);
    }
    case DataType::kFloat64: {
      double acc = std::bit_cast<double>(column[0]);
      for (size_t k = 1; k < column.size(); ++k) {
        acc = CombineFloat(op, acc, std::bit_cast<double>(column[k]));
      }
      return std::bit_cast<uint64_t>(acc);
    }
    case DataType::kFloat16:
    case DataType::kBfloat16: {
      const bool half = type == DataType::kFloat16;
      const auto decode = [half](uint64_t v) {
        const auto bits = static_cast<uint16_t>(v);
        return half ? HalfToFloat(bits) : Bfloat16ToFloat(bits);
      };
      float acc = decode(column[0]);
      for (size_t k = 1; k < column.size(); ++k) acc = CombineFloat(op, acc, decode(column[k]));
      return half ? FloatToHalf(acc) : FloatToBfloat16(acc);
    }
    default: {
      uint64_t acc = column[0];
      for (size_t k = 1; k < column.size(); ++k) acc = CombineInt(type, op, acc, column[k]);
      return acc;
    }
  }
}

bool SameResult(DataType type, uint64_t got, uint64_t want) {
  if (IsFloat(type) && IsNaNBits(type, want)) return IsNaNBits(type, got);
  return got == want;
}

// ------------------------------------------------------------ input data

uint64_t EncodeFloat(DataType type, double value) {
  switch (type) {
    case DataType::kFloat16:
      return FloatToHalf(static_cast<float>(value));
    case DataType::kBfloat16:
      return FloatToBfloat16(static_cast<float>(value));
    case DataType::kFloat32:
      return std::bit_cast<uint32_t>(static_cast<float>(value));
    default:
      return std::bit_cast<uint64_t>(value);
  }
}

// Integers: any bit pattern (so sums and products wrap). Floats: mostly
// values of the kind the op sees in practice, plus raw bit patterns (NaN,
// Inf, denormals) and, for max/min, a small value set so ties (+0/-0) occur.
uint64_t RandomElement(DataType type, ReduceOp op, std::mt19937_64& rng) {
  const uint64_t bits = rng();
  if (!IsFloat(type) || bits % 64 == 0) return rng() & Mask(type);
  const double unit = static_cast<double>(rng() >> 11) * 0x1p-53;
  const double sign = (bits & 2) ? -1.0 : 1.0;
  switch (op) {
    case ReduceOp::kSum:
      return EncodeFloat(type, sign * std::ldexp(unit, static_cast<int>((bits >> 8) % 17) - 8));
    case ReduceOp::kProd:
      return EncodeFloat(type, sign * (0.5 + 1.5 * unit));
    default:
      return EncodeFloat(type, sign * static_cast<double>((bits >> 8) % 4));
  }
}

// ------------------------------------------------------------ the harness

struct Shape {
  size_t n_inputs;
  size_t count;
  bool in_place;  // out = inputs[0]
  bool misalign;  // every pointer off its natural alignment
};

// An input or output array at a chosen byte offset, with guard bytes after it
// so that writes past `count` elements are caught.
struct Array {
  static constexpr uint8_t kGuard = 0xA5;
  std::vector<uint8_t> storage;
  size_t offset;
  size_t bytes;

  Array(size_t bytes_in, size_t offset_in)
      : storage(bytes_in + offset_in + 64, kGuard), offset(offset_in), bytes(bytes_in) {}
  uint8_t* data() { return storage.data() + offset; }
  uint64_t Get(size_t i, size_t size) const {
    uint64_t v = 0;
    std::memcpy(&v, storage.data() + offset + i * size, size);
    return v;
  }
  void Set(size_t i, size_t size, uint64_t v) {
    std::memcpy(storage.data() + offset + i * size, &v, size);
  }
  bool GuardsIntact() const {
    for (size_t i = 0; i < storage.size(); ++i) {
      if ((i < offset || i >= offset + bytes) && storage[i] != kGuard) return false;
    }
    return true;
  }
};

void CheckShape(DataType type, ReduceOp op, const Shape& shape, uint64_t seed) {
  SCOPED_TRACE(Describe(type, op) + ", inputs " + std::to_string(shape.n_inputs) + ", count " +
               std::to_string(shape.count) + (shape.in_place ? ", in place" : "") +
               (shape.misalign ? ", unaligned" : ""));
  const size_t size = DataTypeSize(type);
  std::mt19937_64 rng(seed);
  std::vector<Array> inputs;
  std::vector<std::vector<uint64_t>> values(shape.n_inputs, std::vector<uint64_t>(shape.count));
  for (size_t k = 0; k < shape.n_inputs; ++k) {
    inputs.emplace_back(shape.count * size, shape.misalign ? 1 + k % 3 : 0);
    for (size_t i = 0; i < shape.count; ++i) {
      values[k][i] = RandomElement(type, op, rng);
      inputs[k].Set(i, size, values[k][i]);
    }
  }
  Array separate_out(shape.count * size, shape.misalign ? 1 : 0);
  Array& out = shape.in_place ? inputs[0] : separate_out;
  std::vector<const void*> pointers;
  for (Array& input : inputs) pointers.push_back(input.data());

  Reduce(type, op, out.data(), pointers.data(), shape.n_inputs, shape.count);

  std::vector<uint64_t> column(shape.n_inputs);
  size_t mismatches = 0;
  for (size_t i = 0; i < shape.count; ++i) {
    for (size_t k = 0; k < shape.n_inputs; ++k) column[k] = values[k][i];
    const uint64_t want = Reference(type, op, column);
    const uint64_t got = out.Get(i, size);
    if (!SameResult(type, got, want) && ++mismatches <= 3) {
      ADD_FAILURE() << "element " << i << ": got 0x" << std::hex << got << ", want 0x" << want;
    }
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_TRUE(out.GuardsIntact()) << "wrote outside the output array";
  for (size_t k = shape.in_place ? 1 : 0; k < shape.n_inputs; ++k) {
    for (size_t i = 0; i < shape.count; ++i) {
      ASSERT_EQ(inputs[k].Get(i, size), values[k][i]) << "input " << k << " was modified";
    }
  }
}

// Reduces inputs whose elements are all equal to the given bit patterns and
// returns the (common) result bits. 300 elements reach the unrolled loop,
// the single-vector loop and the partial tail on every target.
uint64_t ReduceConstant(DataType type, ReduceOp op, const std::vector<uint64_t>& element) {
  constexpr size_t kCount = 300;
  const size_t size = DataTypeSize(type);
  std::vector<Array> inputs;
  std::vector<const void*> pointers;
  for (uint64_t bits : element) {
    inputs.emplace_back(kCount * size, 1);
    for (size_t i = 0; i < kCount; ++i) inputs.back().Set(i, size, bits);
  }
  for (Array& input : inputs) pointers.push_back(input.data());
  Array out(kCount * size, 1);
  Reduce(type, op, out.data(), pointers.data(), pointers.size(), kCount);
  const uint64_t first = out.Get(0, size);
  for (size_t i = 1; i < kCount; ++i) {
    if (out.Get(i, size) != first) {
      ADD_FAILURE() << "element " << i << " differs from element 0";
      break;
    }
  }
  return first;
}

// ----------------------------------------------------------------- tests

TEST(KernelTest, DispatchFollowsTheSelectedTarget) {
  const std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  EXPECT_STREQ(ReduceTargetName(), hwy::TargetName(targets.front()));  // best first
  for (int64_t target : targets) {
    TargetScope scope(target);
    EXPECT_STREQ(ReduceTargetName(), hwy::TargetName(target));
  }
}

TEST(KernelTest, EveryTypeAndOpMatchesReference) {
  uint64_t seed = 1;
  for (DataType type : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      for (size_t n : {1, 2, 3, 8, 9, 17}) {
        for (size_t count : {0, 1, 7, 20011}) {
          CheckShape(type, op, {n, count, false, true}, seed++);
        }
      }
      CheckShape(type, op, {2, 20011, true, false}, seed++);
      CheckShape(type, op, {10, 33013, true, true}, seed++);  // > 1 chunk, 2 groups
    }
  }
}

TEST(KernelTest, EveryTargetMatchesReference) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    uint64_t seed = 1000;
    for (DataType type : kAllTypes) {
      for (ReduceOp op : kAllOps) {
        for (size_t count : {1, 37, 20011}) {
          CheckShape(type, op, {3, count, false, true}, seed++);
          CheckShape(type, op, {9, count, true, true}, seed++);
        }
      }
    }
  }
}

TEST(KernelTest, LargeArrays) {
  uint64_t seed = 5000;
  for (DataType type : kAllTypes)
    CheckShape(type, ReduceOp::kSum, {8, 1000003, true, true}, seed++);
  CheckShape(DataType::kFloat32, ReduceOp::kProd, {3, 1000003, false, true}, seed++);
  CheckShape(DataType::kFloat16, ReduceOp::kProd, {3, 1000003, false, false}, seed++);
  CheckShape(DataType::kBfloat16, ReduceOp::kMax, {3, 1000003, false, true}, seed++);
  CheckShape(DataType::kFloat64, ReduceOp::kMin, {3, 1000003, false, true}, seed++);
  CheckShape(DataType::kInt8, ReduceOp::kMin, {3, 1000003, false, true}, seed++);
  CheckShape(DataType::kUint8, ReduceOp::kProd, {3, 1000003, false, true}, seed++);
  CheckShape(DataType::kInt64, ReduceOp::kProd, {3, 1000003, false, true}, seed++);
}

TEST(KernelTest, SingleInputIsAnExactCopy) {
  // Signalling NaNs would be quietened by any arithmetic path.
  const std::vector<std::pair<DataType, uint64_t>> cases = {
      {DataType::kFloat16, 0x7C01},
      {DataType::kBfloat16, 0xFF81},
      {DataType::kFloat32, 0x7F800001},
      {DataType::kFloat64, 0x7FF0000000000001}};
  for (const auto& [type, bits] : cases) {
    for (ReduceOp op : kAllOps) {
      EXPECT_EQ(ReduceConstant(type, op, {bits}), bits) << Describe(type, op);
    }
  }
}

uint64_t Nan(DataType type) { return EncodeFloat(type, std::nan("")); }
uint64_t Inf(DataType type, double sign = 1.0) { return EncodeFloat(type, sign * INFINITY); }

TEST(KernelTest, NaNInAnyInputGivesNaN) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    for (DataType type :
         {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBfloat16}) {
      const uint64_t one = EncodeFloat(type, 1.0), two = EncodeFloat(type, 2.0);
      for (ReduceOp op : kAllOps) {
        for (size_t nan_at = 0; nan_at < 3; ++nan_at) {
          std::vector<uint64_t> element = {one, two, one};
          element[nan_at] = Nan(type);
          EXPECT_TRUE(IsNaNBits(type, ReduceConstant(type, op, element)))
              << Describe(type, op) << ", NaN in input " << nan_at;
        }
      }
    }
  }
}

TEST(KernelTest, InfinitiesAndOverflowFollowIeee) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    for (DataType type :
         {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBfloat16}) {
      SCOPED_TRACE(Describe(type, ReduceOp::kSum));
      const uint64_t inf = Inf(type), minus_inf = Inf(type, -1.0);
      const uint64_t one = EncodeFloat(type, 1.0);
      EXPECT_TRUE(IsNaNBits(type, ReduceConstant(type, ReduceOp::kSum, {inf, minus_inf})));
      EXPECT_TRUE(IsNaNBits(type, ReduceConstant(type, ReduceOp::kProd, {inf, 0})));
      EXPECT_EQ(ReduceConstant(type, ReduceOp::kSum, {one, inf, one}), inf);
      // The largest finite value of each type, doubled.
      const uint64_t max = type == DataType::kFloat16    ? 0x7BFF
                           : type == DataType::kBfloat16 ? 0x7F7F
                           : type == DataType::kFloat32  ? 0x7F7FFFFF
                                                         : 0x7FEFFFFFFFFFFFFF;
      const uint64_t sign = uint64_t{1} << (8 * DataTypeSize(type) - 1);
      EXPECT_EQ(ReduceConstant(type, ReduceOp::kSum, {max, max}), inf);
      EXPECT_EQ(ReduceConstant(type, ReduceOp::kSum, {max | sign, max | sign}), minus_inf);
      EXPECT_EQ(ReduceConstant(type, ReduceOp::kProd, {max, EncodeFloat(type, 2.0)}), inf);
    }
  }
}

TEST(KernelTest, DenormalsAreKeptExactly) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    // The smallest denormals of each type add like integers.
    for (DataType type :
         {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBfloat16}) {
      SCOPED_TRACE(Describe(type, ReduceOp::kSum));
      EXPECT_EQ(ReduceConstant(type, ReduceOp::kSum, {1, 2, 3}), 6u);
      EXPECT_EQ(ReduceConstant(type, ReduceOp::kProd, {5, EncodeFloat(type, 1.0)}), 5u);
      EXPECT_EQ(ReduceConstant(type, ReduceOp::kMax, {0, 3, 1}), 3u);
      EXPECT_EQ(ReduceConstant(type, ReduceOp::kMin, {3, EncodeFloat(type, 1.0), 1}), 1u);
    }
    // float16 denormals whose float32 sum is a float16 normal.
    EXPECT_EQ(ReduceConstant(DataType::kFloat16, ReduceOp::kSum, {0x3FF, 0x001}), 0x400u);
  }
}

TEST(KernelTest, HalfTypesAccumulateInFloat32AndRoundOnce) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    SCOPED_TRACE(ReduceTargetName());
    // 1 + 2^-11 + 2^-11: rounding after each step would give 1.0 twice.
    EXPECT_EQ(ReduceConstant(DataType::kFloat16, ReduceOp::kSum, {0x3C00, 0x1000, 0x1000}),
              0x3C01u);
    // 1 + 2^-8 + 2^-8 in bfloat16 likewise.
    EXPECT_EQ(ReduceConstant(DataType::kBfloat16, ReduceOp::kSum, {0x3F80, 0x3B80, 0x3B80}),
              0x3F81u);
    // 65504 + 16 lies halfway between 65504 and 2^16: even is Inf.
    EXPECT_EQ(ReduceConstant(DataType::kFloat16, ReduceOp::kSum, {0x7BFF, 0x4C00}), 0x7C00u);
    // 65504 + 8 rounds back down.
    EXPECT_EQ(ReduceConstant(DataType::kFloat16, ReduceOp::kSum, {0x7BFF, 0x4800}), 0x7BFFu);
    // A NaN whose payload is only in the low bits must not become Inf.
    EXPECT_TRUE(IsNaNBits(DataType::kBfloat16,
                          ReduceConstant(DataType::kBfloat16, ReduceOp::kSum, {0x7F81, 0})));
  }
}

TEST(KernelTest, MaxMinTiesKeepTheEarlierInput) {
  for (DataType type :
       {DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBfloat16}) {
    const uint64_t minus_zero = uint64_t{1} << (8 * DataTypeSize(type) - 1);
    for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
      EXPECT_EQ(ReduceConstant(type, op, {minus_zero, 0}), minus_zero) << Describe(type, op);
      EXPECT_EQ(ReduceConstant(type, op, {0, minus_zero}), 0u) << Describe(type, op);
    }
  }
}

TEST(KernelTest, IntegersWrapAround) {
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    TargetScope scope(target);
    SCOPED_TRACE(ReduceTargetName());
    EXPECT_EQ(ReduceConstant(DataType::kInt8, ReduceOp::kSum, {0x7F, 1}), 0x80u);
    EXPECT_EQ(ReduceConstant(DataType::kUint8, ReduceOp::kSum, {0xFF, 1}), 0u);
    EXPECT_EQ(ReduceConstant(DataType::kInt8, ReduceOp::kProd, {16, 16}), 0u);
    EXPECT_EQ(ReduceConstant(DataType::kInt8, ReduceOp::kProd, {0x80, 0xFF}), 0x80u);
    EXPECT_EQ(ReduceConstant(DataType::kUint8, ReduceOp::kProd, {0xFF, 0xFF, 0xFF}), 0xFFu);
    EXPECT_EQ(ReduceConstant(DataType::kInt32, ReduceOp::kSum, {0x7FFFFFFF, 1}), 0x80000000u);
    EXPECT_EQ(ReduceConstant(DataType::kUint32, ReduceOp::kProd, {0x10000, 0x10000}), 0u);
    EXPECT_EQ(ReduceConstant(DataType::kInt64, ReduceOp::kProd, {uint64_t{1} << 63, ~uint64_t{0}}),
              uint64_t{1} << 63);
    EXPECT_EQ(ReduceConstant(DataType::kUint64, ReduceOp::kProd,
                             {0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF}),
              1u);
    EXPECT_EQ(ReduceConstant(DataType::kUint64, ReduceOp::kSum, {~uint64_t{0}, 2}), 1u);
    // Signedness of the comparisons.
    EXPECT_EQ(ReduceConstant(DataType::kInt8, ReduceOp::kMax, {0x80, 0x7F}), 0x7Fu);
    EXPECT_EQ(ReduceConstant(DataType::kUint8, ReduceOp::kMax, {0x80, 0x7F}), 0x80u);
    EXPECT_EQ(ReduceConstant(DataType::kInt64, ReduceOp::kMin, {1, ~uint64_t{0}}), ~uint64_t{0});
    EXPECT_EQ(ReduceConstant(DataType::kUint64, ReduceOp::kMin, {1, ~uint64_t{0}}), 1u);
    EXPECT_EQ(ReduceConstant(DataType::kUint32, ReduceOp::kMax, {0x80000000, 1}), 0x80000000u);
  }
}

// ------------------------------------------- rounding, checked from outside

// Decodes every finite non-negative pattern up to `max_finite`; the encodings
// are monotonic, so the correctly rounded value of x is found by bisection.
// `overflow` is where the next pattern would be if the format went on.
uint16_t RoundByBisection(double x, float (*decode)(uint16_t), uint16_t max_finite, double overflow,
                          uint16_t inf) {
  const uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  const double a = std::fabs(x);
  uint16_t lo = 0, hi = max_finite;  // invariant: decode(lo) <= a
  if (a >= decode(max_finite)) {
    lo = max_finite;
  } else {
    while (hi - lo > 1) {
      const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
      (decode(mid) <= a ? lo : hi) = mid;
    }
  }
  const double below = decode(lo);
  const double above = lo == max_finite ? overflow : decode(static_cast<uint16_t>(lo + 1));
  const uint16_t up = lo == max_finite ? inf : static_cast<uint16_t>(lo + 1);
  uint16_t h;
  if (a - below < above - a) {
    h = lo;
  } else if (a - below > above - a) {
    h = up;
  } else {
    h = (lo % 2 == 0) ? lo : up;
  }
  return static_cast<uint16_t>(h | sign);
}

uint16_t RoundToHalf(double x) { return RoundByBisection(x, HalfToFloat, 0x7BFF, 65536.0, 0x7C00); }
uint16_t RoundToBfloat16(double x) {
  return RoundByBisection(x, Bfloat16ToFloat, 0x7F7F, 0x1p128, 0x7F80);
}

// Distance in units in the last place, counting across zero.
int UlpDistance(uint16_t a, uint16_t b) {
  const auto ordinal = [](uint16_t v) { return (v & 0x8000) ? -(v & 0x7FFF) : int{v}; };
  return std::abs(ordinal(a) - ordinal(b));
}

TEST(KernelTest, HalfSumsMatchFloat64SumRoundedOnce) {
  constexpr size_t kCount = 100003, kInputs = 8;
  for (DataType type : {DataType::kFloat16, DataType::kBfloat16}) {
    const bool half = type == DataType::kFloat16;
    std::mt19937_64 rng(42);
    std::vector<std::vector<uint16_t>> in(kInputs, std::vector<uint16_t>(kCount));
    std::vector<const void*> pointers;
    for (auto& input : in) {
      for (uint16_t& v : input) {
        const double unit = static_cast<double>(rng() >> 11) * 0x1p-53 - 0.5;
        const float value = static_cast<float>(std::ldexp(unit, static_cast<int>(rng() % 21) - 10));
        v = half ? FloatToHalf(value) : FloatToBfloat16(value);
      }
      pointers.push_back(input.data());
    }
    std::vector<uint16_t> out(kCount);
    Reduce(type, ReduceOp::kSum, out.data(), pointers.data(), kInputs, kCount);
    size_t exact = 0;
    for (size_t i = 0; i < kCount; ++i) {
      double sum = 0;
      for (const auto& input : in) sum += half ? HalfToFloat(input[i]) : Bfloat16ToFloat(input[i]);
      const uint16_t want = half ? RoundToHalf(sum) : RoundToBfloat16(sum);
      exact += out[i] == want;
      ASSERT_LE(UlpDistance(out[i], want), 1) << DataTypeName(type) << " element " << i;
    }
    EXPECT_GE(static_cast<double>(exact), 0.999 * kCount) << DataTypeName(type);
  }
}

TEST(KernelHalfTest, DecodesEveryPattern) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    const int exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    const float got = HalfToFloat(static_cast<uint16_t>(h));
    if (exp == 31) {
      EXPECT_EQ(std::isnan(got), mant != 0) << std::hex << h;
      if (mant == 0) {
        EXPECT_EQ(got, sign * std::numeric_limits<double>::infinity());
      }
      continue;
    }
    const double want =
        exp == 0 ? sign * std::ldexp(mant, -24) : sign * std::ldexp(1024 + mant, exp - 25);
    ASSERT_EQ(static_cast<double>(got), want) << std::hex << h;
    ASSERT_EQ(std::signbit(got), (h & 0x8000) != 0) << std::hex << h;
    // bfloat16 is the top half of a float32 pattern.
    ASSERT_EQ(std::bit_cast<uint32_t>(Bfloat16ToFloat(static_cast<uint16_t>(h))), h << 16);
  }
}

TEST(KernelHalfTest, RoundTripsAndKeepsNaN) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const uint16_t half = FloatToHalf(HalfToFloat(bits));
    const uint16_t bf16 = FloatToBfloat16(Bfloat16ToFloat(bits));
    if (IsNaNBits(DataType::kFloat16, bits)) {
      EXPECT_TRUE(IsNaNBits(DataType::kFloat16, half)) << std::hex << h;
      EXPECT_EQ(half & 0x8000, bits & 0x8000);
    } else {
      ASSERT_EQ(half, bits);
    }
    if (IsNaNBits(DataType::kBfloat16, bits)) {
      EXPECT_TRUE(IsNaNBits(DataType::kBfloat16, bf16)) << std::hex << h;
      EXPECT_EQ(bf16 & 0x8000, bits & 0x8000);
    } else {
      ASSERT_EQ(bf16, bits);
    }
  }
  // float32 NaNs whose payload lies only in the bits that get dropped.
  for (uint32_t bits : {0x7F800001u, 0xFF800001u, 0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F801FFFu}) {
    const float nan = std::bit_cast<float>(bits);
    EXPECT_TRUE(IsNaNBits(DataType::kFloat16, FloatToHalf(nan))) << std::hex << bits;
    EXPECT_TRUE(IsNaNBits(DataType::kBfloat16, FloatToBfloat16(nan))) << std::hex << bits;
  }
}

TEST(KernelHalfTest, TiesRoundToEven) {
  // The midpoint between neighbours is exact in float32 for both formats.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const float mid = static_cast<float>((double{HalfToFloat(static_cast<uint16_t>(h))} +
                                          HalfToFloat(static_cast<uint16_t>(h + 1))) /
                                         2);
    ASSERT_EQ(FloatToHalf(mid), (h % 2 == 0) ? h : h + 1) << std::hex << h;
    ASSERT_EQ(FloatToHalf(-mid), ((h % 2 == 0) ? h : h + 1) | 0x8000) << std::hex << h;
  }
  for (uint32_t h = 0; h < 0x7F7F; ++h) {
    const float mid = static_cast<float>((double{Bfloat16ToFloat(static_cast<uint16_t>(h))} +
                                          Bfloat16ToFloat(static_cast<uint16_t>(h + 1))) /
                                         2);
    ASSERT_EQ(FloatToBfloat16(mid), (h % 2 == 0) ? h : h + 1) << std::hex << h;
  }
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7C00);  // max + half ulp: even is Inf
  EXPECT_EQ(FloatToHalf(65519.996f), 0x7BFF);
  EXPECT_EQ(FloatToBfloat16(std::numeric_limits<float>::max()), 0x7F80);
}

TEST(KernelHalfTest, RandomFloatsRoundToNearest) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    // Exponents from far below the float16 denormals to past the bfloat16 max.
    const float unit = static_cast<float>(static_cast<double>(rng() >> 40) * 0x1p-24);
    const float x = std::ldexp(unit, static_cast<int>(rng() % 300) - 150) * ((rng() & 1) ? -1 : 1);
    ASSERT_EQ(FloatToHalf(x), RoundToHalf(x)) << x;
    ASSERT_EQ(FloatToBfloat16(x), RoundToBfloat16(x)) << x;
  }
}

}  // namespace
}  // namespace rs::kernels
