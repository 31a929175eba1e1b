#include "protocol/partition.h"

#include <algorithm>

namespace rs::protocol {

std::vector<PieceSpan> Partition(const PartitionParams& p) {
  std::vector<PieceSpan> pieces;
  if (p.count == 0) return pieces;
  const uint64_t elem = std::max<size_t>(p.elem_size, 1);
  const uint64_t reducers = std::max<uint32_t>(p.reducers, 1);
  const uint64_t streams = std::max<uint32_t>(p.streams, 1);
  const uint64_t max_elems = std::max<uint64_t>(p.max_piece_bytes / elem, 1);
  const uint64_t min_elems = std::max<uint64_t>(p.min_piece_bytes / elem, 1);

  uint64_t n = (p.count + max_elems - 1) / max_elems;
  // Spread medium operations over every reducer as long as pieces stay useful.
  n = std::max(n, std::min(reducers, p.count / min_elems));
  n = std::max<uint64_t>(n, 1);
  // As many pieces on every reducer: an operation takes as long as its
  // busiest reducer, and 7 pieces on 3 reducers (1 MiB in 168 KiB pieces)
  // put 3 on one, so the whole operation took 9/7 of its time. Rounding up
  // only makes pieces smaller, so it is done while they stay useful.
  const uint64_t even = (n + reducers - 1) / reducers * reducers;
  if (n > reducers && p.count / even >= min_elems) n = even;

  pieces.reserve(n);
  const uint64_t base = p.count / n;
  const uint64_t extra = p.count % n;  // the first `extra` pieces get one more
  uint64_t offset = 0;
  for (uint64_t i = 0; i < n; ++i) {
    PieceSpan span;
    span.index = static_cast<uint32_t>(i);
    span.offset = offset;
    span.count = base + (i < extra ? 1 : 0);
    span.reducer = static_cast<uint32_t>((p.seq + i) % reducers);
    // Consecutive pieces on one reducer take turns on its streams.
    span.stream = static_cast<uint32_t>((p.seq + i / reducers) % streams);
    offset += span.count;
    pieces.push_back(span);
  }
  return pieces;
}

}  // namespace rs::protocol
