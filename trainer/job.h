// One rank's whole run, from parsed options to the summary: the model and
// its bucket plan, the synthetic data, the rendezvous (when the job has
// one), the backend, the --verify reference, the training loop. main()
// calls RunJob; the GPU backend, built only with CUDA and NCCL, comes in
// through GpuHooks so that this library does not depend on it.
//
// Threading: RunJob runs on the caller's thread.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "trainer/backend/backend.h"
#include "trainer/config/options.h"
#include "trainer/net/rendezvous.h"
#include "trainer/report/reporter.h"

namespace rs::trainer {

struct GpuHooks {
  // Rank 0: NCCL's unique id, handed to every rank by the rendezvous.
  std::function<StatusOr<RendezvousBlob>()> make_id;
  std::function<StatusOr<std::unique_ptr<Backend>>(const TrainOptions&, const MlpLayout&, std::vector<float> initial,
                                                   const RendezvousBlob& id)>
      create;
};

// `gpu` is null when the GPU backend is not built.
Status RunJob(const TrainOptions& options, Reporter& reporter, const GpuHooks* gpu);

}  // namespace rs::trainer
