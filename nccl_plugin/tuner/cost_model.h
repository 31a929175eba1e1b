// The cost model of docs/performance.md, as the tuner applies it to choose,
// per all-reduce size, between the reducers (NCCL's CollNet) and NCCL's own
// algorithms over the same links. Pure functions of the parameters: every
// rank of a communicator computes the same choice from the same inputs,
// which NCCL requires (all ranks must run the same algorithm).
//
//   n nodes, N ranks, R reducers, B a node's link rate, B_r a reducer's,
//   S bytes, C(S) the bytes of one CollNet call (NCCL's chunking).
//
//   reducers: t = 2 h + r + max(S / B, n S / (R B_r)) + C(S) / B
//             (each node sends S once and receives S once; the reducers
//             together carry n S each way; the first call's round trip is
//             not overlapped)
//   ring:     t = 2 (n - 1) h + 2 (N - 1) / N * S / B
//             (NCCL's ring or tree: about 2 (N-1)/N S each way per node,
//             2 (n - 1) network hops)
//
// h is one network hop between hosts over TCP and r a reducer's turn-around
// (kHopUs, kReducerTurnUs: assumptions for commodity TCP, not measurements).
// With 2 nodes of one GPU each, a ring moves no more bytes than the reducers
// and takes no more hops, so the reducers never win. With 3 or more nodes
// they win small sizes (fewer hops) and, when sized as docs/performance.md
// says (R B_r >= n B), large ones (fewer bytes); on slow links the first
// call's round trip can lose them a range in between. With fewer reducers
// than that they win up to a size and lose above it.
//
// Thread-safety: immutable value type.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace rs::plugin {

struct CostModelParams {
  int nodes = 0;
  int ranks = 0;
  int reducers = 0;
  double link_gbps = 0;          // a node's link (the net device's speed)
  double reducer_link_gbps = 0;  // a reducer's link; 0: the same as a node's
};

class CostModel {
 public:
  static constexpr double kHopUs = 20;
  static constexpr double kReducerTurnUs = 20;
  // NCCL's CollNet chunking (enqueue.cc): one iallreduce covers the chunks
  // of up to 8 channels, at least 32 KiB and at most 2 MiB, smaller for
  // smaller collectives; about an eighth of the collective in between.
  static constexpr size_t kMinCallBytes = 32 << 10;
  static constexpr size_t kMaxCallBytes = 2 << 20;

  explicit CostModel(const CostModelParams& params);

  const CostModelParams& params() const { return params_; }
  double ReducersUs(size_t bytes) const;
  double RingUs(size_t bytes) const;
  bool PreferReducers(size_t bytes) const { return ReducersUs(bytes) < RingUs(bytes); }

  // The sizes in [lo, hi] at which the preference flips: the first size that
  // is decided differently from the size before it. Found by bisection
  // between powers of two, so exact to the byte.
  std::vector<size_t> SwitchSizes(size_t lo, size_t hi) const;
  // One line for the log: where the reducers are used.
  std::string Describe() const;

 private:
  static size_t CallBytes(size_t bytes);

  CostModelParams params_;
  double link_bytes_per_us_ = 0;
  double reducer_bytes_per_us_ = 0;
};

}  // namespace rs::plugin
