#include "common/cluster_spec.h"

#include <nlohmann/json.hpp>

namespace rs {
namespace {

using Json = nlohmann::json;

Status SpecError(const std::string& what) { return Status(Code::kInvalidArgument, "CLUSTER_SPEC: " + what); }

// Parses with a depth bound: the callback sees every value's depth before it
// is built, and refuses everything below kMaxDepth (the parser itself is
// iterative, but a deep tree would still be destroyed recursively).
StatusOr<Json> ParseBounded(std::string_view text) {
  if (text.size() > ClusterSpec::kMaxInputBytes) {
    return SpecError("longer than " + std::to_string(ClusterSpec::kMaxInputBytes) + " bytes");
  }
  bool too_deep = false;
  Json::parser_callback_t bound = [&too_deep](int depth, Json::parse_event_t, Json&) {
    if (depth > ClusterSpec::kMaxDepth) too_deep = true;
    return !too_deep;
  };
  try {
    Json doc = Json::parse(text.begin(), text.end(), bound);
    if (too_deep) return SpecError("nested deeper than " + std::to_string(ClusterSpec::kMaxDepth) + " levels");
    return doc;
  } catch (const Json::exception& e) {
    // e.what() names the byte position ("parse error at line 1, column 7: ...").
    return SpecError(std::string("not valid JSON: ") + e.what());
  }
}

}  // namespace

StatusOr<ClusterSpec> ClusterSpec::Parse(std::string_view json) {
  StatusOr<Json> parsed = ParseBounded(json);
  if (!parsed.ok()) return parsed.status();
  const Json& doc = *parsed;
  if (!doc.is_object()) return SpecError("top level is not an object");

  ClusterSpec spec;
  auto cluster = doc.find("cluster");
  if (cluster == doc.end()) return SpecError("no \"cluster\" member");
  if (!cluster->is_object()) return SpecError("\"cluster\" is not an object");
  for (const auto& [pool, entries] : cluster->items()) {
    if (!entries.is_array()) return SpecError("cluster." + pool + " is not an array");
    std::vector<std::string> hosts;
    for (size_t j = 0; j < entries.size(); ++j) {
      if (!entries[j].is_string()) {
        return SpecError("cluster." + pool + "[" + std::to_string(j) + "] is not a string");
      }
      hosts.push_back(entries[j].get<std::string>());
    }
    spec.pools.emplace_back(pool, std::move(hosts));
  }

  // The task is needed by reducerd (its own entry) and informs logs; a
  // malformed one is an error so that a spec we misread is noticed rather
  // than half-used.
  if (auto task = doc.find("task"); task != doc.end()) {
    if (!task->is_object()) return SpecError("\"task\" is not an object");
    if (auto type = task->find("type"); type != task->end()) {
      if (!type->is_string()) return SpecError("task.type is not a string");
      spec.task_type = type->get<std::string>();
    }
    if (auto index = task->find("index"); index != task->end()) {
      if (!index->is_number_integer() || index->get<int64_t>() < 0 || index->get<int64_t>() > 1'000'000) {
        return SpecError("task.index is not a small non-negative integer");
      }
      spec.task_index = static_cast<int>(index->get<int64_t>());
    }
  }
  return spec;
}

const std::vector<std::string>* ClusterSpec::Pool(std::string_view name) const {
  for (auto it = pools.rbegin(); it != pools.rend(); ++it) {
    if (it->first == name) return &it->second;
  }
  return nullptr;
}

const std::string* ClusterSpec::Self() const {
  const std::vector<std::string>* pool = Pool(task_type);
  if (pool == nullptr || task_index < 0 || static_cast<size_t>(task_index) >= pool->size()) return nullptr;
  return &(*pool)[static_cast<size_t>(task_index)];
}

}  // namespace rs
