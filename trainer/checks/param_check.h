// The cross-rank weight check: every rank hashes its parameters, the hashes
// travel through the same all-reduce path as the gradients (rank r's hash
// in slot r of a vector of zeros, summed: every rank then sees every hash),
// and any rank whose parameters differ from rank 0's is named. A last slot
// carries rank 0's --verify verdict, so every rank stops on it together.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"

namespace rs::trainer {

// A 64-bit hash of the parameters' bit patterns (not their values: -0 and
// +0 differ, NaNs are compared bitwise).
uint64_t ParameterHash(const float* params, size_t n);

// The vector this rank contributes: its hash in slot `rank` of `world`
// slots, then the verify slot (rank 0: the number of steps done when its
// parameters first differed from the reference, 0 for never).
std::vector<uint64_t> CheckContribution(uint32_t rank, uint32_t world, uint64_t hash, uint64_t verify_failed_step);

// After the sum: ok, or kMismatch naming the ranks whose hash differs from
// rank 0's at `step`, or reporting rank 0's failed verification.
Status EvaluateCheck(const std::vector<uint64_t>& summed, uint32_t world, uint64_t step);

}  // namespace rs::trainer
