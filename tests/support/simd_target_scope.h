// Runs the kernels on one SIMD target for the lifetime of the object: for the
// tests that hold every target this CPU runs to the same results.
#pragma once

#include <hwy/targets.h>

#include <cstdint>

namespace rs::kernels {

class TargetScope {
 public:
  explicit TargetScope(int64_t target) { hwy::SetSupportedTargetsForTest(target); }
  ~TargetScope() { hwy::SetSupportedTargetsForTest(0); }
  TargetScope(const TargetScope&) = delete;
  TargetScope& operator=(const TargetScope&) = delete;
};

}  // namespace rs::kernels
