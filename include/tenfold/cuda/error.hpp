#pragma once
// Every CUDA runtime call goes through check(): a failure throws tenfold::error naming the call, the
// runtime's own description and the error's symbolic name, so a log line is enough to diagnose it.
#include <cuda_runtime.h>

#include <string>

#include "tenfold/core/error.hpp"

namespace tenfold::cuda {

// "tenfold::cuda: cudaMalloc(&p, bytes) failed: out of memory (cudaErrorMemoryAllocation)"
inline std::string error_message(const char* call, cudaError_t status) {
  return std::string("tenfold::cuda: ") + call + " failed: " + cudaGetErrorString(status) + " (" +
         cudaGetErrorName(status) + ")";
}

inline void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    // A failed call leaves its error sticky for the next cudaGetLastError(); clear it so that one
    // failure is reported once. (Sticky errors from a faulting kernel cannot be cleared and stay.)
    (void)cudaGetLastError();
    throw error(error_message(call, status));
  }
}

// After a launch: configuration errors are reported here, faults in the kernel at the next sync.
inline void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }
} // namespace tenfold::cuda

// Checks a runtime call and names it, spelled as written, in the error.
#define TENFOLD_CUDA_CHECK(call) ::tenfold::cuda::check((call), #call)
