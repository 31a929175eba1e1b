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
#include <cstdint>

#include "common/dtype.h"

namespace rs::kernels {

// out may alias inputs[0] (the reducer reduces in place into rank 0's slot);
// no other overlap is allowed. Pointers need no particular alignment.
// n_inputs >= 1; with one input, out receives a copy of it.
void Reduce(DataType type, ReduceOp op, void* out, const void* const* inputs, size_t n_inputs,
            size_t count);

// The SIMD target the dispatcher picked, for logs and benchmark output ("AVX2").
const char* ReduceTargetName();

// ------------------------------------------------ float32 sums on a 16-bit wire
// A float32 sum may travel as bfloat16 or float16 (the "wire type", `wire`
// below: kBfloat16 or kFloat16; anything else is a programming error and
// aborts). The worker narrows its piece, the reducer widens every rank's piece
// to float32, sums in rank order in float32 and narrows the sum once: two
// roundings per element whatever the number of ranks. Narrowing follows
// half.h exactly (round to nearest, ties to even; NaN stays NaN; beyond the
// range gives Inf). No pointer alignment is required; no overlap is allowed
// except where stated.

// Narrows count float32 values into out. Returns false when any result is Inf
// or NaN (an input was not finite, or lies beyond the wire type's range, e.g.
// |x| >= 65520 for float16): out is still written, but the caller sends the
// float32 values instead, so the wire never carries an Inf or NaN it created
// and a non-finite input keeps its exact bits.
bool NarrowFloat32(DataType wire, const float* in, uint16_t* out, size_t count);

// Whether no value is Inf or NaN. With every input in the wire type,
// Reduce(wire, kSum, ...) followed by this check is the fast way to the
// result: where it holds, the result equals NarrowFloat32(SumToFloat32(...)).
bool AllFinite(DataType wire, const uint16_t* values, size_t count);

// Widens count wire-type values into float32 (exact).
void WidenToFloat32(DataType wire, const uint16_t* in, float* out, size_t count);

// After a NarrowFloat32(values -> narrowed) that returned false: replaces
// each value whose narrowed form is finite by that form, widened, and keeps
// the others. The float32 that then goes instead of the wire type holds,
// element by element, exactly what the wire type would have carried where
// it could: an element's rounding never depends on its neighbours (nor on
// how the elements were cut into pieces and parts), so results are the same
// bits from run to run. Scalar: the path is rare.
void WidenWhereFinite(DataType wire, const uint16_t* narrowed, float* values, size_t count);

// out[i] = ((x0[i] + x1[i]) + x2[i]) + ... in float32, where input k holds
// elements of input_types[k]: the wire type (widened exactly) or kFloat32
// (the piece of a rank that could not narrow it). With every input in the
// wire type, NarrowFloat32(out) equals Reduce(wire, kSum, ...) bit for bit.
// out may alias inputs[0] when input_types[0] is kFloat32.
void SumToFloat32(DataType wire, float* out, const void* const* inputs,
                  const DataType* input_types, size_t n_inputs, size_t count);

}  // namespace rs::kernels
