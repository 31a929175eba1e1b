// The data-parallel training loop, the same for every backend. Each step:
// this rank's batch; forward and backward, starting each gradient bucket's
// all-reduce as soon as the layer that completes it is done; wait for the
// all-reduces; average and update. Around it, the checks: before the first
// step, every --check-every steps and after the last, the ranks compare a
// hash of their parameters through the same all-reduce path; with a
// Reference (--verify, rank 0) every step is compared bit for bit with the
// single-process reference. The loss reported is the mean over the ranks.
//
// Threading: Run() on one thread, which drives the backend.
#pragma once

#include "trainer/backend/backend.h"
#include "trainer/checks/reference.h"
#include "trainer/config/options.h"
#include "trainer/ddp/bucket_plan.h"
#include "trainer/report/reporter.h"

namespace rs::trainer {

class TrainLoop {
 public:
  // `reference` may be null; everything must outlive the loop.
  TrainLoop(const TrainOptions& options, const BucketPlan& plan, const SyntheticData& data, Backend& backend,
            Reporter& reporter, Reference* reference)
      : o_(options), plan_(plan), data_(data), backend_(backend), reporter_(reporter), reference_(reference) {}

  // Trains every step; the first error (a failed all-reduce, a failed
  // check) ends the run on this rank.
  StatusOr<TrainSummary> Run();

 private:
  Status RunStep(uint64_t step, double* loss);
  Status CheckParameters(uint64_t steps_done, uint64_t* hash);
  StatusOr<double> MeanLoss(double local);

  const TrainOptions& o_;
  const BucketPlan& plan_;
  const SyntheticData& data_;
  Backend& backend_;
  Reporter& reporter_;
  Reference* reference_;

  Batch batch_;
  std::vector<float> params_;
  uint64_t verify_failed_step_ = 0;  // 1-based step of the first mismatch
  CommTiming last_comm_;
};

}  // namespace rs::trainer
