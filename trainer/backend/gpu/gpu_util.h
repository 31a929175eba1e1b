// Small RAII and error helpers for the GPU backend: device buffers, streams,
// events and the cuBLAS handle held in unique_ptrs with their deleters, and
// CUDA/cuBLAS/NCCL results turned into Status with the call named.
//
// Thread-safety: value helpers; objects are owned by one thread.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace rs::trainer::gpu {

inline Status CudaStatus(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return Status::Ok();
  return Status(Code::kIo, std::string("CUDA: ") + what + ": " + cudaGetErrorString(err));
}

inline Status CublasStatus(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return Status::Ok();
  return Status(Code::kIo, std::string("cuBLAS: ") + what + ": " + cublasGetStatusString(st));
}

#define RS_CUDA(expr) RS_RETURN_IF_ERROR(::rs::trainer::gpu::CudaStatus((expr), #expr))
#define RS_CUBLAS(expr) RS_RETURN_IF_ERROR(::rs::trainer::gpu::CublasStatus((expr), #expr))

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
template <typename T>
using DevicePtr = std::unique_ptr<T, CudaFree>;

template <typename T>
StatusOr<DevicePtr<T>> DeviceAlloc(size_t count, const char* what) {
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, count * sizeof(T) + 1);
  if (err != cudaSuccess) {
    return Status(Code::kResourceExhausted, std::string("CUDA: cannot allocate ") + std::to_string(count * sizeof(T)) +
                                                " bytes for " + what + ": " + cudaGetErrorString(err));
  }
  return DevicePtr<T>(static_cast<T*>(p));
}

struct StreamDestroy {
  void operator()(CUstream_st* s) const { cudaStreamDestroy(s); }
};
using StreamPtr = std::unique_ptr<CUstream_st, StreamDestroy>;

struct EventDestroy {
  void operator()(CUevent_st* e) const { cudaEventDestroy(e); }
};
using EventPtr = std::unique_ptr<CUevent_st, EventDestroy>;

struct PinnedFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};

struct CublasDestroy {
  void operator()(cublasContext* h) const { cublasDestroy(h); }
};
using CublasPtr = std::unique_ptr<cublasContext, CublasDestroy>;

}  // namespace rs::trainer::gpu
