// `reducerctl plan`: how many reducers a job needs and what it gains, from
// the number of worker nodes, the NIC bandwidths and, optionally, the
// reducers' CPU cores. Pure functions.
//
// The model (see docs/guide/sizing.md and docs/performance.md): with
// reducers every worker node sends each byte of a gradient once and receives
// the sum once, so a node's all-reduce runs at its line rate B unless the
// reducers, which together must take in n * S bytes per S-byte all-reduce,
// are the bottleneck, by their NICs or by their CPUs:
//
//   algbw(reducers) = min(B, K * R / n, K * C * G * 8 / n)   K reducers of R Gbps, C cores
//   algbw(ring)     = B * n / (2 (n - 1))                      peer-to-peer ring
//   NIC count       = ceil(n * B / R)          the fewest with K*R >= n*B
//   CPU count       = ceil(n * B / 8 / (C * G)) the fewest whose cores reduce n*B
//   recommended K   = the larger of the two (the NIC count without C)
//   socket buffers  = 2 * (algbw / K) * RTT per connection, against Linux's
//                     default ceilings (4 MiB send, 6 MiB receive)
//
// G is the reduction rate per core: GB of worker input a reducer takes in,
// reduces and sends back per CPU-second, its kernel's TCP work included.
// The default is measured (kReducerGbPerCoreSecond); measure your machines
// with bench/cpu_per_byte.sh. The speedup over a ring is 2(n-1)/n when K is
// at least the recommended count (1.5x at 4 nodes, 1.75x at 8, towards 2x).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace rs::reducerctl {

// GB of worker input per CPU-second, measured on loopback with
// bench/cpu_per_byte.sh (4 ranks, 2 reducers, 64 MiB float32 sum, 40
// operations per run so that start-up counts little, the client's defaults;
// docs/performance.md has the table and the conditions).
// Reducer: reducerd's user + system time, 0.34-0.41 s/GB, plus half the
// machine's irq + softirq time (the packet work charged to no process, split
// between the two ends), about 0.07 s/GB: about 0.45 s/GB.
inline constexpr double kReducerGbPerCoreSecond = 2.2;
// Worker: the client library's user + system time without the benchmark's
// checks (failover's copy of every input included), 0.59-0.66 s/GB, plus the
// other half of the irq + softirq: about 0.7 s/GB.
inline constexpr double kWorkerGbPerCoreSecond = 1.4;

struct PlanInput {
  uint32_t workers = 0;        // worker nodes (one NIC each, or their sum)
  double worker_gbps = 0;      // each worker node's NIC, Gbit/s
  double reducer_gbps = 0;     // each reducer machine's NIC, Gbit/s
  uint32_t reducers = 0;       // evaluate this many; 0: the recommended count
  double reducer_cores = 0;    // each reducer machine's cores (vCPUs); 0: CPU not sized
  double gb_per_core_second = kReducerGbPerCoreSecond;          // G, the reducers' rate
  double worker_gb_per_core_second = kWorkerGbPerCoreSecond;    // the client library's rate
  double rtt_ms = 0;           // round trip between workers and reducers; 0: buffers not sized
  // A Compute Engine machine type for the reducers (--reducer-machine): its
  // NIC and vCPUs stand in for reducer_gbps and reducer_cores where those
  // are 0. Empty: none named.
  std::string reducer_machine;
};

// Compute Engine's CPU machine types that suit reducers, with the egress
// bandwidth Compute Engine documents for them without Tier_1 networking
// (2 Gbit/s per vCPU, at most 32 Gbit/s) and their vCPUs.
struct MachineType {
  std::string_view name;
  double vcpus;
  double gbps;
};
// nullptr when reducerctl does not know the type.
const MachineType* FindMachineType(std::string_view name);
// "n1-highcpu-8, n1-highcpu-16, ...": for messages.
std::string KnownMachineTypes();
// The reducer machine type when the user names none: Google's
// recommendation for Reduction Server on Vertex AI.
inline constexpr std::string_view kDefaultReducerMachine = "n1-highcpu-16";

// Linux's default ceilings for autotuned socket buffers (the third value of
// net.ipv4.tcp_wmem and tcp_rmem).
inline constexpr double kDefaultSendBufferCeiling = 4 << 20;
inline constexpr double kDefaultReceiveBufferCeiling = 6 << 20;

struct Plan {
  PlanInput input;
  uint32_t recommended_reducers = 0;
  uint32_t reducers = 0;           // evaluated
  double worker_total_gbps = 0;    // n * B
  double reducer_total_gbps = 0;   // K * R
  double algbw_gbps = 0;           // predicted, per worker, with the reducers
  double ring_algbw_gbps = 0;      // a ring all-reduce on the same workers
  double speedup = 0;              // algbw / ring
  bool reducer_bound = false;      // the reducers (NICs or cores) limit algbw below B
  // The CPU side.
  uint32_t nic_reducers = 0;              // the fewest with K * R >= n * B
  uint32_t cpu_reducers = 0;              // the fewest whose cores reduce n * B; 0 without reducer_cores
  double reducer_cores_per_worker = 0;    // reducer cores one worker node keeps busy at B
  double reducer_cores_needed = 0;        // n times that
  double reducer_cores_total = 0;         // K * C
  double worker_cores = 0;                // cores of each worker node the client library uses at B
  bool cpu_bound = false;                 // the reducers' cores, not their NICs, limit algbw
  // The socket buffers (with rtt_ms). Each worker has one connection per
  // reducer and each carries algbw / K both ways; a connection needs its
  // bandwidth-delay product in flight, and a buffer holds about half its
  // size in payload (the rest is the kernel's bookkeeping), so the ceilings
  // should be twice the product.
  double connection_gbps = 0;        // algbw / K
  double connection_bdp_bytes = 0;   // connection_gbps * RTT
  double buffer_ceiling_bytes = 0;   // 2 * connection_bdp_bytes: what tcp_wmem and tcp_rmem should allow
  bool default_buffers_suffice = true;  // Linux's default ceilings are at least that
};

// Errors name the flag: --workers below 2, a bandwidth or rate not above
// zero (and no --reducer-machine to take it from), an unknown machine type,
// negative cores or round trip.
StatusOr<Plan> ComputePlan(const PlanInput& input);

}  // namespace rs::reducerctl
