// The shapes of the traffic reducer-bench replays besides its plain size
// sweep: what NCCL 2.28's CollNet Chain proxy hands the plugin for one user
// all-reduce, and the gradient buckets of a PyTorch DDP backward pass. Pure
// functions; workload_runs.h replays them against reducers.
// Thread-safe: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace rs::bench {

enum class Pattern {
  kSweep,    // one all-reduce per size, nccl-tests style
  kCollNet,  // each size as NCCL's CollNet proxy issues it: whole chunks, many in flight
  kDdp,      // a model's gradients in buckets, all in flight, waited for at the end of a step
};

// "sweep", "collnet" or "ddp".
StatusOr<Pattern> ParsePattern(const std::string& name);
const char* PatternName(Pattern pattern);

// NCCL 2.28.9 with CollNet Chain and one GPU per node (chain depth 1): the
// user all-reduce of S bytes runs on C channels; each channel moves its share
// in steps of one chunk, and the send proxy hands the plugin one iallreduce
// per group of up to 8 channels per step (COLLNET_GROUP_NSUBS), covering
// whole chunks even where the data ends (the tail is whatever the staging
// buffer holds, different on every node). Each group keeps at most 8 steps
// (NCCL_STEPS) in flight, so at most 64 calls with 64 channels, and the
// proxy polls test() on the oldest call of each group until it is done.
// Calls are issued in order, step by step, and cover consecutive bytes.
struct CollNetShape {
  uint64_t user_bytes = 0;
  uint64_t chunk_bytes = 0;     // per channel and step
  uint32_t channels = 0;
  std::vector<uint64_t> calls;  // bytes of each iallreduce, in issue order
  uint32_t max_inflight = 0;    // calls in flight at most
  uint64_t wire_bytes = 0;      // sum of calls: >= user_bytes (whole chunks)
};

// NCCL 2.28.9's chunk for CollNet Chain (enqueue.cc, calcCollChunking): 256 KiB,
// halved while the all-reduce has fewer than 64 chunks per channel (down to
// 128 KiB), fewer than 8 (down to 64 KiB), fewer than 1 (down to 32 KiB).
uint64_t CollNetChunkBytes(uint64_t user_bytes, uint32_t channels);

// chunk_bytes 0: NCCL's rule above. channels 1 to 64.
CollNetShape ShapeCollNet(uint64_t user_bytes, uint32_t channels, uint64_t chunk_bytes);

// PyTorch DDP's gradient buckets for a model of model_bytes: the first bucket
// (the last layers, ready first) is capped at first_bucket_bytes (torch's
// default 1 MiB), the others at bucket_bytes (bucket_cap_mb, 25 MiB by
// default), the last holds the rest. Real buckets end at parameter
// boundaries; these are exact caps. Sizes are whole elements of elem_size;
// caps below one element hold one element. Empty for a model below one element.
std::vector<uint64_t> DdpBuckets(uint64_t model_bytes, uint64_t bucket_bytes, uint64_t first_bucket_bytes,
                                 size_t elem_size);

// "25M" or "25M,64M": a comma list of sizes, each at least 1 byte.
StatusOr<std::vector<uint64_t>> ParseSizeList(const std::string& text);

}  // namespace rs::bench
