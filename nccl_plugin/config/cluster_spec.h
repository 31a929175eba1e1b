// Vertex AI's CLUSTER_SPEC: the JSON every replica of a custom job receives,
//   {"cluster": {"workerpool0": ["host:2222"], ..., "workerpool2": [...]},
//    "environment": "cloud", "task": {"type": "workerpool1", "index": 0}, "job": {...}}
// We need the pools (reducers are `workerpool2`) and, for logs, this task.
// Unknown members are ignored; members we use must have the documented types.
//
// Thread-safety: immutable value type; Parse is reentrant.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace rs::plugin {

struct ClusterSpec {
  inline static constexpr std::string_view kReducerPool = "workerpool2";

  // Errors are kInvalidArgument saying what is wrong, e.g.
  // "CLUSTER_SPEC: cluster.workerpool2[1] is not a string".
  static StatusOr<ClusterSpec> Parse(std::string_view json);

  // The entries of a pool, or nullptr when the spec has no such pool.
  const std::vector<std::string>* Pool(std::string_view name) const;

  std::vector<std::pair<std::string, std::vector<std::string>>> pools;
  std::string task_type;  // empty when absent
  int task_index = -1;    // -1 when absent
};

}  // namespace rs::plugin
