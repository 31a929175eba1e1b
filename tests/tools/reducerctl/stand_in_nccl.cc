// A stand-in for NCCL's libnccl.so.2 for `reducerctl doctor --nccl`: only
// ncclGetVersion, reporting the version code in RS_STAND_IN_NCCL_VERSION
// (major * 10000 + minor * 100 + patch; default 22809, NCCL 2.28.9), so the
// doctor's tests can play any release without a GPU or a real NCCL.
#include <cstdlib>

extern "C" __attribute__((visibility("default"))) int ncclGetVersion(int* version) {
  if (version == nullptr) return 4;  // ncclInvalidArgument
  const char* code = std::getenv("RS_STAND_IN_NCCL_VERSION");
  *version = code != nullptr ? std::atoi(code) : 22809;
  return 0;  // ncclSuccess
}
