// --verify: the whole job's training redone in one process. For each step it
// regenerates every rank's batch, computes every rank's gradients with the
// same CpuMlp a rank uses, sums them bucket by bucket in rank order with the
// reducers' own kernel (rs::kernels::Reduce: float32 sums left to right,
// bfloat16 accumulated in float32 and rounded once; with a wire type, each
// rank's float32 gradients and the sum rounded to it as the client and the
// reducers do), then averages and
// applies the shared SGD code. Training through the reducers must give
// exactly these parameters, bit for bit, at every step.
//
// Costs WORLD_SIZE times a rank's compute and WORLD_SIZE + 3 copies of the
// parameters. Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "common/dtype.h"
#include "common/status.h"
#include "trainer/data/synthetic.h"
#include "trainer/ddp/bucket_plan.h"
#include "trainer/ddp/sgd.h"
#include "trainer/model/cpu_mlp.h"

namespace rs::trainer {

struct ReferenceConfig {
  MlpLayout layout;
  BucketPlan plan;
  uint64_t seed = 1;
  uint32_t world = 1;
  int batch = 32;
  DataType grad_dtype = DataType::kFloat32;
  SgdConfig sgd;
  std::vector<float> initial_params;
  // The wire type of float32 sums (kFloat32: off): float32 gradients are
  // then rounded to it per rank and the sum once more, as on the wire.
  DataType wire = DataType::kFloat32;
};

class Reference {
 public:
  explicit Reference(ReferenceConfig config);

  // Trains step `step` as the ranks and the reducers together do; returns
  // the mean of the ranks' losses.
  double Step(uint64_t step);
  // Ok when `params` equal the reference's bit for bit; otherwise kMismatch
  // naming the first parameter that differs and both values.
  Status Compare(const std::vector<float>& params, uint64_t step) const;
  const std::vector<float>& params() const { return params_; }

 private:
  // Rounds values to the wire type where it can hold them, as the client and
  // the reducers do (--wire-dtype).
  void RoundAsOnTheWire(float* values, size_t count);

  ReferenceConfig config_;
  SyntheticData data_;
  CpuMlp mlp_;
  Batch batch_;
  std::vector<float> params_, momentum_, sum_;
  std::vector<std::vector<float>> grads_;          // per rank
  std::vector<std::vector<uint16_t>> grads_bf16_;  // per rank, bfloat16 mode
  std::vector<uint16_t> sum_bf16_;
  std::vector<uint16_t> narrowed_;  // --wire-dtype: one bucket in the wire type
};

}  // namespace rs::trainer
