// The deterministic partition of one operation into pieces and of pieces onto
// reducers and streams. Every rank computes exactly the same partition from
// the same inputs, which is what lets a reducer match contributions by
// (session, sequence number, piece index) alone. Pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rs::protocol {

struct PartitionParams {
  uint64_t count = 0;         // elements in the operation
  size_t elem_size = 4;
  size_t max_piece_bytes = 1 << 20;
  size_t min_piece_bytes = 64 << 10;
  uint32_t reducers = 1;
  uint32_t streams = 1;       // streams per reducer
  uint64_t seq = 0;           // operation sequence number: rotates ownership
};

struct PieceSpan {
  uint32_t index = 0;
  uint64_t offset = 0;  // in elements
  uint64_t count = 0;   // in elements
  uint32_t reducer = 0;
  uint32_t stream = 0;
};

// Pieces are element-aligned, at most max_piece_bytes (one element at least),
// as equal as possible, and at least `reducers` of them when the operation is
// large enough that each would still hold min_piece_bytes. Beyond one round
// of the reducers, every reducer gets as many pieces where they still hold
// min_piece_bytes (an operation waits for its busiest reducer). Piece i of
// operation seq goes to reducer (seq + i) % reducers, so successive small
// operations land on different reducers. A count of 0 yields no pieces.
std::vector<PieceSpan> Partition(const PartitionParams& params);

}  // namespace rs::protocol
