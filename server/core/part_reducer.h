// The reduction of a piece: sums (or another op) a run of every rank's
// slot in rank order, ((in0 op in1) op in2) ..., with the SIMD kernels, so
// that every reducer and every cut of a piece into parts gives the same
// bits. Nothing else: no locks, no counters, no sending.
//
// A float32 sum on a 16-bit wire (Piece::wide_sum) adds the ranks'
// elements in float32, whichever type each came in, and rounds the sum
// once to the wire type; the run goes in the wire type when all of it
// fits, else in float32 (the elements that fit still rounded), so no Inf
// or NaN is made on the way.
//
// Threading: ReducePart may run on any thread, in parallel with other runs
// of the same piece. The caller owns [begin, end) of every slot (it claimed
// the run: Piece::Claim) and every rank's type is set (Piece::BeginLocked).
#pragma once

#include <cstdint>

#include "common/dtype.h"
#include "server/core/piece.h"

namespace rs::server {

// Where a reduced run is (in the piece's own buffer) and the type it is in.
struct ReducedPart {
  const uint8_t* data = nullptr;
  DataType dtype = DataType::kFloat32;
};

// Reduces elements `run` of every rank's slot of `piece`. `wire` is the
// session's wire type of float32 sums, used when the piece is a wide sum.
ReducedPart ReducePart(Piece& piece, DataType wire, Piece::Run run);

}  // namespace rs::server
