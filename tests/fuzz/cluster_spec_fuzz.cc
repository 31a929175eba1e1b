// Fuzz target: the CLUSTER_SPEC reader (common/cluster_spec.*), which parses
// JSON from the environment of every Vertex AI replica. Properties: any input
// is parsed or refused with a message (no crash, no unbounded recursion);
// what is accepted is consistent: every pool can be looked up, and Self()
// points inside its pool.
#include <string_view>

#include "common/cluster_spec.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = rs::ClusterSpec::Parse(text);
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().code() == rs::Code::kInvalidArgument);
    FUZZ_CHECK(spec.status().message().rfind("CLUSTER_SPEC: ", 0) == 0);
    return 0;
  }
  FUZZ_CHECK(size <= rs::ClusterSpec::kMaxInputBytes);
  for (const auto& [name, entries] : spec->pools) {
    const auto* pool = spec->Pool(name);
    FUZZ_CHECK(pool != nullptr);
  }
  FUZZ_CHECK(spec->task_index >= -1);
  if (const std::string* self = spec->Self()) {
    const auto* pool = spec->Pool(spec->task_type);
    FUZZ_CHECK(pool != nullptr && spec->task_index >= 0 &&
               static_cast<size_t>(spec->task_index) < pool->size());
    FUZZ_CHECK(self == &(*pool)[static_cast<size_t>(spec->task_index)]);
  }
  return 0;
}
