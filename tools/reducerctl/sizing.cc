#include "tools/reducerctl/sizing.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace rs::reducerctl {
namespace {

constexpr std::array<MachineType, 9> kMachineTypes{{
    {"n1-highcpu-8", 8, 16},
    {"n1-highcpu-16", 16, 32},
    {"n1-highcpu-32", 32, 32},
    {"n2-highcpu-8", 8, 16},
    {"n2-highcpu-16", 16, 32},
    {"n2-highcpu-32", 32, 32},
    {"c2-standard-8", 8, 16},
    {"c2-standard-16", 16, 32},
    {"c2-standard-30", 30, 32},
}};

bool Positive(double x) { return x > 0 && std::isfinite(x); }

// The fewest whole machines for a need; the epsilon keeps an exact fit
// (4 x 100 / 25 = 16) from rounding up.
uint32_t AtLeast(double needed) { return static_cast<uint32_t>(std::max(1.0, std::ceil(needed - 1e-9))); }

}  // namespace

const MachineType* FindMachineType(std::string_view name) {
  for (const MachineType& m : kMachineTypes) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

std::string KnownMachineTypes() {
  std::string out;
  for (const MachineType& m : kMachineTypes) out += (out.empty() ? "" : ", ") + std::string(m.name);
  return out;
}

StatusOr<Plan> ComputePlan(const PlanInput& given) {
  PlanInput input = given;
  if (!input.reducer_machine.empty()) {
    const MachineType* machine = FindMachineType(input.reducer_machine);
    if (machine == nullptr) {
      return Status(Code::kInvalidArgument, "--reducer-machine '" + input.reducer_machine +
                                                "' is not a type reducerctl knows (" + KnownMachineTypes() +
                                                "); give --reducer-gbps and --reducer-cores for others");
    }
    if (input.reducer_gbps == 0) input.reducer_gbps = machine->gbps;
    if (input.reducer_cores == 0) input.reducer_cores = machine->vcpus;
  }
  if (input.workers < 2) {
    // A ring of one node moves nothing: there is nothing to size or compare.
    return Status(Code::kInvalidArgument, "--workers must be at least 2 (an all-reduce over one node moves no data)");
  }
  if (!Positive(input.worker_gbps)) {
    return Status(Code::kInvalidArgument, "--worker-gbps must be a positive number of Gbit/s");
  }
  if (!Positive(input.reducer_gbps)) {
    return Status(Code::kInvalidArgument,
                  "--reducer-gbps must be a positive number of Gbit/s (or name the machine: --reducer-machine)");
  }
  if (!(input.reducer_cores >= 0) || !std::isfinite(input.reducer_cores)) {
    return Status(Code::kInvalidArgument, "--reducer-cores must be a number of cores, 0 or more");
  }
  if (!Positive(input.gb_per_core_second)) {
    return Status(Code::kInvalidArgument, "--gb-per-core-second must be a positive number of GB per CPU-second");
  }
  if (!Positive(input.worker_gb_per_core_second)) {
    return Status(Code::kInvalidArgument,
                  "--worker-gb-per-core-second must be a positive number of GB per CPU-second");
  }
  if (!(input.rtt_ms >= 0) || !std::isfinite(input.rtt_ms)) {
    return Status(Code::kInvalidArgument, "--rtt must be a duration, 0 or more");
  }
  const double n = input.workers;
  Plan plan;
  plan.input = input;
  plan.worker_total_gbps = n * input.worker_gbps;
  plan.nic_reducers = AtLeast(plan.worker_total_gbps / input.reducer_gbps);
  // GB/s of worker input at the line rate, and the cores that reduce it.
  const double worker_gb_per_s = input.worker_gbps / 8;
  plan.reducer_cores_per_worker = worker_gb_per_s / input.gb_per_core_second;
  plan.reducer_cores_needed = n * plan.reducer_cores_per_worker;
  plan.worker_cores = worker_gb_per_s / input.worker_gb_per_core_second;
  if (input.reducer_cores > 0) plan.cpu_reducers = AtLeast(plan.reducer_cores_needed / input.reducer_cores);
  plan.recommended_reducers = std::max(plan.nic_reducers, plan.cpu_reducers);
  plan.reducers = input.reducers > 0 ? input.reducers : plan.recommended_reducers;
  plan.reducer_total_gbps = plan.reducers * input.reducer_gbps;
  plan.reducer_cores_total = plan.reducers * input.reducer_cores;
  const double nic_limit = plan.reducer_total_gbps / n;
  plan.algbw_gbps = std::min(input.worker_gbps, nic_limit);
  if (input.reducer_cores > 0) {
    const double cpu_limit = plan.reducer_cores_total * input.gb_per_core_second * 8 / n;
    plan.cpu_bound = cpu_limit < plan.algbw_gbps;
    plan.algbw_gbps = std::min(plan.algbw_gbps, cpu_limit);
  }
  plan.reducer_bound = plan.algbw_gbps < input.worker_gbps;
  plan.ring_algbw_gbps = input.worker_gbps * n / (2 * (n - 1));
  plan.speedup = plan.algbw_gbps / plan.ring_algbw_gbps;
  if (input.rtt_ms > 0) {
    plan.connection_gbps = plan.algbw_gbps / plan.reducers;
    plan.connection_bdp_bytes = plan.connection_gbps * 1e9 / 8 * input.rtt_ms / 1e3;
    plan.buffer_ceiling_bytes = 2 * plan.connection_bdp_bytes;
    plan.default_buffers_suffice =
        plan.buffer_ceiling_bytes <= std::min(kDefaultSendBufferCeiling, kDefaultReceiveBufferCeiling);
  }
  return plan;
}

}  // namespace rs::reducerctl
