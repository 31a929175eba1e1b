#include "nccl_plugin/config/cluster_spec.h"

#include <cmath>

#include "nccl_plugin/config/json_value.h"

namespace rs::plugin {
namespace {

Status SpecError(const std::string& what) {
  return Status(Code::kInvalidArgument, "CLUSTER_SPEC: " + what);
}

}  // namespace

StatusOr<ClusterSpec> ClusterSpec::Parse(std::string_view json) {
  StatusOr<JsonValue> doc = JsonValue::Parse(json);
  if (!doc.ok()) return doc.status().Prefixed("CLUSTER_SPEC");
  if (!doc->is_object()) return SpecError("top level is not an object");

  ClusterSpec spec;
  const JsonValue* cluster = doc->Find("cluster");
  if (cluster == nullptr) return SpecError("no \"cluster\" member");
  if (!cluster->is_object()) return SpecError("\"cluster\" is not an object");
  for (size_t i = 0; i < cluster->keys().size(); ++i) {
    const std::string& pool = cluster->keys()[i];
    const JsonValue& entries = cluster->items()[i];
    if (!entries.is_array()) return SpecError("cluster." + pool + " is not an array");
    std::vector<std::string> hosts;
    for (size_t j = 0; j < entries.items().size(); ++j) {
      if (!entries.items()[j].is_string()) {
        return SpecError("cluster." + pool + "[" + std::to_string(j) + "] is not a string");
      }
      hosts.push_back(entries.items()[j].text());
    }
    spec.pools.emplace_back(pool, std::move(hosts));
  }

  // The task is informational; a malformed one is still an error so that a
  // spec we misread is noticed rather than half-used.
  if (const JsonValue* task = doc->Find("task"); task != nullptr) {
    if (!task->is_object()) return SpecError("\"task\" is not an object");
    if (const JsonValue* type = task->Find("type"); type != nullptr) {
      if (!type->is_string()) return SpecError("task.type is not a string");
      spec.task_type = type->text();
    }
    if (const JsonValue* index = task->Find("index"); index != nullptr) {
      double v = index->as_number();
      if (index->kind() != JsonValue::Kind::kNumber || v < 0 || v > 1e6 || std::floor(v) != v) {
        return SpecError("task.index is not a small non-negative integer");
      }
      spec.task_index = static_cast<int>(v);
    }
  }
  return spec;
}

const std::vector<std::string>* ClusterSpec::Pool(std::string_view name) const {
  // The last duplicate wins, as for any JSON member.
  for (auto it = pools.rbegin(); it != pools.rend(); ++it) {
    if (it->first == name) return &it->second;
  }
  return nullptr;
}

}  // namespace rs::plugin
