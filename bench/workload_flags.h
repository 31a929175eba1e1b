// reducer-bench's flags for its traffic patterns (--pattern and the
// --collnet-* and --ddp-* settings): registered on the command line by
// AddWorkloadFlags, checked once into WorkloadOptions by ParseWorkloadFlags.
// Kept apart from reducer_bench.cc's own flags so each can change alone.
// Threading: called once, from main, before anything runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/workloads.h"
#include "common/status.h"

// CLI11 is header-only and costs about 10 CPU-seconds in every file that
// includes it: the flags' own file does, its users need only the name.
namespace CLI {
class App;
}  // namespace CLI

namespace rs::bench {

struct WorkloadOptions {
  Pattern pattern = Pattern::kSweep;
  // collnet: the sizes of the sweep are the user's all-reduce sizes.
  uint32_t collnet_channels = 4;
  uint64_t collnet_chunk = 0;  // 0: NCCL's rule for the size
  bool collnet_spin = true;    // poll Done() and yield, as NCCL's proxy thread does; false: block in Wait()
  // ddp: one row per bucket cap.
  uint64_t ddp_model_bytes = 100 << 20;
  std::vector<uint64_t> ddp_bucket_bytes = {25 << 20};
  uint64_t ddp_first_bucket_bytes = 1 << 20;
  std::chrono::milliseconds ddp_gap{0};      // backward compute before each bucket is ready
  std::chrono::milliseconds ddp_forward{0};  // forward compute before the backward pass: no communication
};

// The flags' text, as typed.
struct WorkloadFlags {
  std::string pattern = "sweep";
  uint32_t collnet_channels = 4;
  std::string collnet_chunk = "auto";
  std::string collnet_poll = "spin";
  std::string ddp_model = "100M", ddp_buckets = "25M", ddp_first_bucket = "1M", ddp_gap = "0",
              ddp_forward = "0";
};

void AddWorkloadFlags(CLI::App& app, WorkloadFlags* flags);

// Errors name the flag.
Status ParseWorkloadFlags(const WorkloadFlags& flags, WorkloadOptions* out);

// The --help text that explains the patterns.
extern const char kPatternHelp[];

}  // namespace rs::bench
