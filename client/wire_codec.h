// The worker's side of float32 sums on a 16-bit wire (ClientOptions::
// wire_dtype): narrows a piece to the wire type as it is written and widens
// a result part back into the float32 receive buffer. Same rounding as the
// reducer's kernels (kernels.h; round to nearest even, half.h), so a rank
// and a reducer agree to the bit.
//
// Plain C++ loops, on purpose: the client is linked into the NCCL plugin, which
// may depend on glibc and libstdc++ only, and Highway's run-time dispatch
// lives in a shared libhwy. The loops are written for the compiler to
// vectorise, and compiled for AVX2 and AVX-512 as well as the baseline, the
// CPU choosing at load (the compilers' target attribute, no library).
// Thread-safe: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/dtype.h"

namespace rs::client {

// Narrows count values to `wire` (kBfloat16 or kFloat16). Returns false when
// a result is Inf or NaN (the piece then goes as float32 instead).
bool NarrowPiece(DataType wire, const float* in, uint16_t* out, size_t count);
void WidenPart(DataType wire, const uint16_t* in, float* out, size_t count);
// After NarrowPiece returned false: the float32 to send instead, element by
// element the widened narrowed value where it is finite and the input where
// it is not (as the reducer does: kernels::WidenWhereFinite), so an element's
// rounding never depends on the other elements of its piece.
void FallbackPiece(DataType wire, const uint16_t* narrowed, const float* in, float* out, size_t count);

// The builds of NarrowPiece and WidenPart, fastest first: AVX-512 (F, BW, VL),
// AVX2, the target's baseline (SSE2 on x86-64). Each gives the same bits.
enum class WireCodecImpl { kAvx512, kAvx2, kPortable };
bool WireCodecAvailable(WireCodecImpl impl);  // on this CPU
// With a given build (the portable one if unavailable), for tests that
// compare them and benchmarks.
bool NarrowPieceUsing(WireCodecImpl impl, DataType wire, const float* in, uint16_t* out, size_t count);
void WidenPartUsing(WireCodecImpl impl, DataType wire, const uint16_t* in, float* out, size_t count);
const char* WireCodecImplName(WireCodecImpl impl);
// The name of the one NarrowPiece and WidenPart use here.
const char* WireCodecImplementation();

}  // namespace rs::client
