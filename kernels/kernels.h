// Reduction kernels: combine N equally long input arrays element-wise, in
// input order, into one output. Inputs are combined strictly left to right
// (((in0 op in1) op in2) ...), so the result is bitwise identical whatever the
// order in which the inputs arrived or the SIMD width the CPU offers.
//
// Semantics:
// - float16/bfloat16 accumulate in float32 and round once at the end
//   (round-to-nearest-even); NaN stays NaN, overflow gives Inf.
// - Integers wrap around (two's complement) for sum and prod.
// - max/min: a NaN in any input makes the element NaN; on ties the earlier
//   input wins.
// - Nothing traps: NaN, Inf and denormals pass through as IEEE arithmetic says.
// The best SIMD target for this CPU is chosen at run time (Highway).
// Thread-safe: pure functions.
#pragma once

#include <cstddef>

#include "common/dtype.h"

namespace rs::kernels {

// out may alias inputs[0] (the reducer reduces in place into rank 0's slot);
// no other overlap is allowed. Pointers need no particular alignment.
// n_inputs >= 1; with one input, out receives a copy of it.
void Reduce(DataType type, ReduceOp op, void* out, const void* const* inputs, size_t n_inputs,
            size_t count);

// The SIMD target the dispatcher picked, for logs and benchmark output ("AVX2").
const char* ReduceTargetName();

}  // namespace rs::kernels
