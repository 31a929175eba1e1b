// Vertex AI's CLUSTER_SPEC: the JSON every replica of a custom job receives,
//   {"cluster": {"workerpool0": ["host:2222"], ..., "workerpool2": [...]},
//    "environment": "cloud", "task": {"type": "workerpool1", "index": 0}, "job": {...}}
// Reducers are `workerpool2`; the chief is `workerpool0`, the other GPU
// workers `workerpool1`. The NCCL plugin and the trainer find the reducers
// here, reducerd finds its own entry (and so its port). Unknown members are
// ignored; members we use must have the documented types.
//
// Parsed with nlohmann-json (header-only, so the NCCL plugin gains no shared
// library). Input is bounded in size and nesting depth, so a hostile value
// cannot exhaust memory or the stack.
//
// Thread-safety: immutable value type; Parse is reentrant.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace rs {

struct ClusterSpec {
  inline static constexpr std::string_view kChiefPool = "workerpool0";
  inline static constexpr std::string_view kWorkerPool = "workerpool1";
  inline static constexpr std::string_view kReducerPool = "workerpool2";
  inline static constexpr size_t kMaxInputBytes = 1 << 20;
  inline static constexpr int kMaxDepth = 32;

  // Errors are kInvalidArgument saying what is wrong, e.g.
  // "CLUSTER_SPEC: cluster.workerpool2[1] is not a string".
  static StatusOr<ClusterSpec> Parse(std::string_view json);

  // The entries of a pool, or nullptr when the spec has no such pool.
  const std::vector<std::string>* Pool(std::string_view name) const;
  // This replica's own entry ("host:port"): cluster[task.type][task.index],
  // or nullptr when the task is absent or points outside its pool.
  const std::string* Self() const;

  std::vector<std::pair<std::string, std::vector<std::string>>> pools;
  std::string task_type;  // empty when absent
  int task_index = -1;    // -1 when absent
};

}  // namespace rs
