#include "bench/workload_flags.h"

#include <CLI/CLI.hpp>

#include "common/units.h"

namespace rs::bench {

const char kPatternHelp[] =
    "\n"
    "Patterns (--pattern):\n"
    "  sweep    one all-reduce of each size (-b to -e), --inflight at once: nccl-tests' all_reduce_perf.\n"
    "  collnet  each size as a user all-reduce that NCCL 2.28 runs with CollNet Chain (one GPU per node):\n"
    "           the plugin sees ceil(size / (channels x chunk)) steps of one iallreduce per 8 channels,\n"
    "           each call whole chunks (32 KiB to 256 KiB per channel, NCCL's rule for the size unless\n"
    "           --collnet-chunk), so 32 KiB to 2 MiB per call and the tail past the data differs per\n"
    "           rank; up to 8 calls per 8 channels in flight (64 at most), issued in order, the oldest\n"
    "           polled until done. algbw = user size / time; only the user's bytes are checked.\n"
    "  ddp      one training step of PyTorch DDP: --ddp-model bytes of gradients in buckets (the first\n"
    "           --ddp-first-bucket, then --ddp-bucket each), one all-reduce per bucket issued as the\n"
    "           backward pass makes it ready (--ddp-gap of compute before each), all waited for at the\n"
    "           end of the step; --ddp-forward of compute before the backward pass leaves the connections\n"
    "           idle, as the forward pass does. One line per bucket size: step time, compute (forward +\n"
    "           buckets x gap), exposed communication (step - compute) and algbw = model bytes / step time.\n"
    "           -b/-e/-f are not used.\n"
    "Every pattern checks every element of the user's data (--check 1).\n";

void AddWorkloadFlags(CLI::App& app, WorkloadFlags* flags) {
  app.add_option("--pattern", flags->pattern, "Traffic pattern: sweep, collnet or ddp (see below)")
      ->capture_default_str();
  app.add_option("--collnet-channels", flags->collnet_channels,
                 "collnet: NCCL channels the all-reduce runs on (one call per 8 channels per step)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--collnet-chunk", flags->collnet_chunk,
                 "collnet: bytes per channel and step, or 'auto' for NCCL 2.28's rule (32K to 256K)")
      ->capture_default_str();
  app.add_option("--collnet-poll", flags->collnet_poll,
                 "collnet: 'spin' polls the oldest call and yields, as NCCL's proxy thread; 'block' waits")
      ->capture_default_str();
  app.add_option("--ddp-model", flags->ddp_model, "ddp: bytes of gradients per step (the model's size)")
      ->capture_default_str();
  app.add_option("--ddp-bucket", flags->ddp_buckets,
                 "ddp: bucket cap (DDP's bucket_cap_mb); a comma list gives one line each")
      ->capture_default_str();
  app.add_option("--ddp-first-bucket", flags->ddp_first_bucket, "ddp: cap of the first bucket (torch: 1 MiB)")
      ->capture_default_str();
  app.add_option("--ddp-gap", flags->ddp_gap,
                 "ddp: backward compute before each bucket is ready (e.g. 5ms); 0: all at once")
      ->capture_default_str();
  app.add_option("--ddp-forward", flags->ddp_forward,
                 "ddp: forward compute at the start of each step, before the first bucket's gap, with no "
                 "communication (e.g. 500ms); 0: none")
      ->capture_default_str();
}

Status ParseWorkloadFlags(const WorkloadFlags& flags, WorkloadOptions* out) {
  auto pattern = ParsePattern(flags.pattern);
  if (!pattern.ok()) return pattern.status();
  out->pattern = *pattern;
  out->collnet_channels = flags.collnet_channels;
  if (flags.collnet_chunk == "auto") {
    out->collnet_chunk = 0;
  } else {
    auto chunk = ParseSize(flags.collnet_chunk);
    if (!chunk.ok()) return chunk.status().Prefixed("--collnet-chunk");
    if (*chunk == 0 || *chunk % 8 != 0) {
      return Status(Code::kInvalidArgument, "--collnet-chunk must be 'auto' or a positive multiple of 8 bytes");
    }
    out->collnet_chunk = *chunk;
  }
  if (flags.collnet_poll != "spin" && flags.collnet_poll != "block") {
    return Status(Code::kInvalidArgument, "--collnet-poll: use spin or block, not '" + flags.collnet_poll + "'");
  }
  out->collnet_spin = flags.collnet_poll == "spin";
  auto model = ParseSize(flags.ddp_model);
  if (!model.ok()) return model.status().Prefixed("--ddp-model");
  if (*model == 0) return Status(Code::kInvalidArgument, "--ddp-model must be at least 1 byte");
  out->ddp_model_bytes = *model;
  auto buckets = ParseSizeList(flags.ddp_buckets);
  if (!buckets.ok()) return buckets.status().Prefixed("--ddp-bucket");
  out->ddp_bucket_bytes = *buckets;
  auto first = ParseSize(flags.ddp_first_bucket);
  if (!first.ok()) return first.status().Prefixed("--ddp-first-bucket");
  if (*first == 0) return Status(Code::kInvalidArgument, "--ddp-first-bucket must be at least 1 byte");
  out->ddp_first_bucket_bytes = *first;
  auto gap = ParseDuration(flags.ddp_gap);
  if (!gap.ok()) return gap.status().Prefixed("--ddp-gap");
  if (gap->count() < 0) return Status(Code::kInvalidArgument, "--ddp-gap must not be negative");
  out->ddp_gap = *gap;
  auto forward = ParseDuration(flags.ddp_forward);
  if (!forward.ok()) return forward.status().Prefixed("--ddp-forward");
  if (forward->count() < 0) return Status(Code::kInvalidArgument, "--ddp-forward must not be negative");
  out->ddp_forward = *forward;
  return Status::Ok();
}

}  // namespace rs::bench
