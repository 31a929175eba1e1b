// The GPU backend: the MLP on one CUDA device (cuBLAS for the products,
// kernels of ours for the rest), gradients all-reduced with ncclAllReduce,
// one call per bucket on a communication stream of its own that waits (by
// CUDA event) only for that bucket's gradients, so all-reduces overlap the
// rest of backward. With the reducer NCCL plugin loaded (NCCL_NET_PLUGIN,
// NCCL_COLLNET_ENABLE=1) NCCL sends them to the reducers.
//
// The NCCL communicator is non-blocking: setup and every wait are bounded
// by the configured timeouts, and an error NCCL reports asynchronously (the
// plugin's, naming a lost reducer, say) aborts the communicator and fails
// the step with NCCL's message instead of hanging.
//
// Built only when CMake finds CUDA and NCCL. Threading: one thread.
#pragma once

#include <memory>
#include <vector>

#include "trainer/backend/backend.h"
#include "trainer/config/options.h"
#include "trainer/net/rendezvous.h"

namespace rs::trainer {

// Rank 0: a fresh NCCL unique id (ncclGetUniqueId), for the rendezvous.
StatusOr<RendezvousBlob> MakeNcclId();

// Picks GPU LOCAL_RANK modulo the visible GPUs, joins the NCCL communicator
// of `id` and uploads the initial parameters.
StatusOr<std::unique_ptr<Backend>> CreateGpuBackend(const TrainOptions& options, const MlpLayout& layout,
                                                    std::vector<float> initial, const RendezvousBlob& id);

}  // namespace rs::trainer
