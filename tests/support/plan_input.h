// reducerctl's PlanInput with the four fields every plan needs, named (the
// rest keep their defaults), for the sizing and output tests.
#pragma once

#include <cstdint>

#include "tools/reducerctl/sizing.h"

namespace rs::reducerctl {

inline PlanInput Inputs(uint32_t workers, double worker_gbps, double reducer_gbps, uint32_t reducers = 0) {
  PlanInput in;
  in.workers = workers;
  in.worker_gbps = worker_gbps;
  in.reducer_gbps = reducer_gbps;
  in.reducers = reducers;
  return in;
}

}  // namespace rs::reducerctl
