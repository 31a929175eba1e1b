// rs-train: parses the options, loads the GPU backend's module when asked
// for it, runs the job and turns the outcome into the exit status (0 trained and checked, 1
// failed, 2 usage). Everything else lives in the rs_trainer library.
#include <cstdio>

#include "trainer/backend/gpu_loader.h"
#include "trainer/config/options.h"
#include "trainer/job.h"
#include "trainer/report/reporter.h"

int main(int argc, char** argv) {
  using namespace rs::trainer;
#if RS_TRAINER_HAVE_GPU
  constexpr bool kGpuBuilt = true;
#else
  constexpr bool kGpuBuilt = false;
#endif
  rs::StatusOr<TrainOptions> options = ParseOptions(argc, argv, rs::ProcessEnv(), kGpuBuilt);
  if (!options.ok()) {
    if (options.status().code() == rs::Code::kCancelled) return 0;  // --help
    std::fprintf(stderr, "rs-train: %s\nrs-train --help lists the flags and environment variables\n",
                 options.status().message().c_str());
    return 2;
  }
  for (const std::string& notice : options->notices) {
    std::fprintf(stderr, "rs-train: rank %u: warning: %s\n", options->rank, notice.c_str());
  }
  Reporter reporter(stdout, stderr, options->json, options->rank);
  rs::StatusOr<GpuHooks> gpu = rs::Status(rs::Code::kInvalidArgument, "not asked for");
  if (options->backend == BackendKind::kGpu) {
    gpu = LoadGpuBackend();
    if (!gpu.ok()) {
      reporter.Error(gpu.status());
      return 1;
    }
  }
  rs::Status st = RunJob(*options, reporter, gpu.ok() ? &*gpu : nullptr);
  if (!st.ok()) {
    reporter.Error(st);
    return 1;
  }
  return 0;
}
