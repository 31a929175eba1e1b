// What rs-train prints. Rank 0 prints the start-up banner, a progress line
// every --log-every steps and the final summary; every other rank prints one
// summary line (with its parameter hash, so runs can be compared from
// outside). Errors go to stderr on every rank, prefixed with the rank. With
// --json every line on stdout is one JSON object with an "event" member
// ("start", "step", "check", "verify", "summary", "error").
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/status.h"
#include "trainer/backend/backend.h"

namespace rs::trainer {

struct StartInfo {
  uint32_t world = 1;
  std::string backend;  // Backend::Describe()
  std::string model;    // MlpShape::ToString()
  uint64_t params = 0;
  uint64_t buckets = 0;
  double bucket_mb = 0;
  int batch = 0;
  uint64_t seed = 0;
  float lr = 0;
  float momentum = 0;
  uint64_t steps = 0;
  std::string session;  // how the ranks found each other
  bool verify = false;
  bool communicates = true;  // false for one rank without reducers: no communication figures
};

// Averages over the steps since the previous progress line.
struct StepReport {
  uint64_t step = 0;  // steps done
  uint64_t steps = 0;
  double loss = 0;  // mean over the ranks, before this step's update
  double step_s = 0;
  double allreduce_s = 0;      // first bucket's start to last bucket's end
  double algbw = 0;            // bytes all-reduced / allreduce_s, bytes per second
  double comm_wait_share = 0;  // blocked on communication / step time
};

struct TrainSummary {
  uint64_t steps = 0;
  uint64_t timed_steps = 0;  // the summary's timings leave out the first steps (warm-up)
  double first_loss = 0;
  double last_loss = 0;
  double wall_s = 0;
  double step_s = 0;
  double allreduce_s = 0;
  double algbw = 0;
  double comm_wait_share = 0;
  uint64_t grad_bytes = 0;  // per step and rank, as sent
  uint64_t checks = 0;      // cross-rank parameter checks passed
  bool verified = false;    // --verify ran and matched every step
  uint64_t final_hash = 0;
  std::optional<FailoverReport> failover;  // with reducer failover on
};

class Reporter {
 public:
  Reporter(FILE* out, FILE* err, bool json, uint32_t rank) : out_(out), err_(err), json_(json), rank_(rank) {}

  void Start(const StartInfo& info);
  void Step(const StepReport& r);
  void Check(uint64_t step, uint64_t hash);
  void Summary(const TrainSummary& s);
  // Every rank: "rs-train: rank 2: error: ..." on stderr (and a JSON line).
  void Error(const Status& status);
  // Rank 0's --verify finding, printed where it happens.
  void VerifyFailed(const Status& status);

 private:
  void Line(const std::string& text);
  FILE* out_;
  FILE* err_;
  bool json_;
  uint32_t rank_;
  bool communicates_ = true;
};

std::string HexHash(uint64_t hash);

}  // namespace rs::trainer
