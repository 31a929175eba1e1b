// Synthetic but learnable training data, made deterministically from a seed
// and the rank: inputs uniform in [-1, 1), targets from a fixed random
// "teacher" network (input_dim -> 64 -> output_dim, ReLU) plus a little
// noise. The student MLP can fit the teacher, so the loss must fall; any
// rank's batch for any step can be regenerated anywhere (the --verify
// reference does that for every rank), and every run is reproducible.
//
// Thread-safety: SyntheticData is immutable after Create; MakeBatch is
// const and may run on several threads with their own Batch.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/model/mlp_layout.h"

namespace rs::trainer {

// One rank's inputs and targets for one step, row-major.
struct Batch {
  int rows = 0;
  int input_dim = 0;
  int output_dim = 0;
  std::vector<float> x;  // [rows][input_dim]
  std::vector<float> y;  // [rows][output_dim]
};

class SyntheticData {
 public:
  static constexpr int kTeacherHidden = 32;
  // Noise added to the targets: uniform in [-kNoise, kNoise).
  static constexpr float kNoise = 0.02f;

  SyntheticData(const MlpShape& shape, uint64_t seed);

  // The batch of `rows` examples rank `rank` trains on at step `step`.
  void MakeBatch(uint32_t rank, uint64_t step, int rows, Batch* out) const;

  int input_dim() const { return input_dim_; }
  int output_dim() const { return output_dim_; }

 private:
  int input_dim_;
  int output_dim_;
  uint64_t seed_;
  std::vector<float> w1_, b1_, w2_, b2_;  // teacher, input-major like the student
};

}  // namespace rs::trainer
