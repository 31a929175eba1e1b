// Deterministic test inputs per (dtype, rank, seed) and the rank-order
// reference result, shared by the multi-rank tests.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dtype.h"

namespace rs::testing {

// `count` elements of `dtype` from a seeded generator. Floats are finite
// values of mixed magnitude (so the order of addition shows in the bits);
// integers use every bit pattern.
std::vector<uint8_t> RandomInput(DataType dtype, size_t count, uint64_t seed);

// The result every rank must see: inputs reduced in rank order.
std::vector<uint8_t> RankOrderReference(DataType dtype, ReduceOp op, size_t count,
                                        const std::vector<std::vector<uint8_t>>& inputs);

}  // namespace rs::testing
