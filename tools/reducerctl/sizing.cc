#include "tools/reducerctl/sizing.h"

#include <algorithm>
#include <cmath>

namespace rs::reducerctl {

StatusOr<Plan> ComputePlan(const PlanInput& input) {
  if (input.workers < 2) {
    // A ring of one node moves nothing: there is nothing to size or compare.
    return Status(Code::kInvalidArgument, "--workers must be at least 2 (an all-reduce over one node moves no data)");
  }
  if (!(input.worker_gbps > 0) || !std::isfinite(input.worker_gbps)) {
    return Status(Code::kInvalidArgument, "--worker-gbps must be a positive number of Gbit/s");
  }
  if (!(input.reducer_gbps > 0) || !std::isfinite(input.reducer_gbps)) {
    return Status(Code::kInvalidArgument, "--reducer-gbps must be a positive number of Gbit/s");
  }
  const double n = input.workers;
  Plan plan;
  plan.input = input;
  plan.worker_total_gbps = n * input.worker_gbps;
  // The epsilon keeps an exact fit (4 x 100 / 25 = 16) from rounding up.
  const double needed = plan.worker_total_gbps / input.reducer_gbps;
  plan.recommended_reducers = static_cast<uint32_t>(std::max(1.0, std::ceil(needed - 1e-9)));
  plan.reducers = input.reducers > 0 ? input.reducers : plan.recommended_reducers;
  plan.reducer_total_gbps = plan.reducers * input.reducer_gbps;
  plan.algbw_gbps = std::min(input.worker_gbps, plan.reducer_total_gbps / n);
  plan.reducer_bound = plan.reducer_total_gbps < plan.worker_total_gbps;
  plan.ring_algbw_gbps = input.worker_gbps * n / (2 * (n - 1));
  plan.speedup = plan.algbw_gbps / plan.ring_algbw_gbps;
  return plan;
}

}  // namespace rs::reducerctl
