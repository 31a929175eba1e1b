// Deterministic benchmark inputs whose reduction is known exactly, for
// reducer-bench's --check. Every rank can compute every other rank's
// contribution, so each rank verifies its whole result locally, with no extra
// communication. The values are chosen so that the exact result is
// representable in the data type whatever the order of accumulation:
// - floating-point sum/max/min: small integers times a power of two that all
//   ranks share for a given element (so float16/bfloat16 are exact too, as
//   long as world x the integer range fits the significand);
// - floating-point prod: +-2^e with a small e, so products stay in range;
// - integers: full-range values (odd ones for prod), so sums and products
//   wrap around.
// Thread-safe: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/dtype.h"

namespace rs::bench {

struct CheckParams {
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  uint32_t world = 1;
  // Changes the inputs; use a fresh seed per batch of operations so that a
  // result left over from an earlier batch is caught.
  uint64_t seed = 0;
  // The client's wire type of float32 sums (kFloat32: off). With another,
  // a float32 sum is checked against the exact double rounding the wire
  // makes: each input rounded to it, the rank-order float32 sum rounded once
  // (where a value does not fit, it stays float32; client/wire_codec.h).
  DataType wire = DataType::kFloat32;
};

// Writes rank's contribution, count elements, into out (any alignment).
void FillInput(const CheckParams& params, uint32_t rank, void* out, size_t count);

struct CheckResult {
  uint64_t wrong = 0;
  std::string first_wrong;  // "element 17 is 3, expected 5"; empty if none
};

// Compares every element of result with the reduction of all ranks' inputs.
CheckResult VerifyResult(const CheckParams& params, const void* result, size_t count);

}  // namespace rs::bench
