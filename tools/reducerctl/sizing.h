// `reducerctl plan`: how many reducers a job needs and what it gains, from
// the number of worker nodes and the NIC bandwidths. Pure functions.
//
// The model (see docs/control-plane.md): with reducers every worker node
// sends each byte of a gradient once and receives the sum once, so a node's
// all-reduce runs at its line rate B unless the reducers, which together
// must take in n * S bytes per S-byte all-reduce, are the bottleneck:
//
//   algbw(reducers) = min(B, K * R / n)        K reducers of R Gbps each
//   algbw(ring)     = B * n / (2 (n - 1))       peer-to-peer ring
//   recommended K   = ceil(n * B / R)           the fewest with K*R >= n*B
//
// which gives the speedup 2(n-1)/n over a ring when K is at least the
// recommended count (1.5x at 4 nodes, 1.75x at 8, towards 2x).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace rs::reducerctl {

struct PlanInput {
  uint32_t workers = 0;        // worker nodes (one NIC each, or their sum)
  double worker_gbps = 0;      // each worker node's NIC, Gbit/s
  double reducer_gbps = 0;     // each reducer machine's NIC, Gbit/s
  uint32_t reducers = 0;       // evaluate this many; 0: the recommended count
};

struct Plan {
  PlanInput input;
  uint32_t recommended_reducers = 0;
  uint32_t reducers = 0;           // evaluated
  double worker_total_gbps = 0;    // n * B
  double reducer_total_gbps = 0;   // K * R
  double algbw_gbps = 0;           // predicted, per worker, with the reducers
  double ring_algbw_gbps = 0;      // a ring all-reduce on the same workers
  double speedup = 0;              // algbw / ring
  bool reducer_bound = false;      // K * R < n * B: the reducers limit algbw
};

// Errors name the flag: --workers below 2, a bandwidth not above zero.
StatusOr<Plan> ComputePlan(const PlanInput& input);

}  // namespace rs::reducerctl
