#pragma once
// Timing for the CUDA benchmarks: the median of repeated runs between CUDA events, after a warm-up.
#include <tenfold/cuda.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace tenfold::bench {
template <class F>
double median_ms(F&& f, int reps = 50) {
  cudaEvent_t start, stop;
  TENFOLD_CUDA_CHECK(cudaEventCreate(&start));
  TENFOLD_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ms(reps);
  for (auto& m : ms) {
    TENFOLD_CUDA_CHECK(cudaEventRecord(start));
    f();
    TENFOLD_CUDA_CHECK(cudaEventRecord(stop));
    TENFOLD_CUDA_CHECK(cudaEventSynchronize(stop));
    TENFOLD_CUDA_CHECK(cudaEventElapsedTime(&m, start, stop));
  }
  TENFOLD_CUDA_CHECK(cudaEventDestroy(start));
  TENFOLD_CUDA_CHECK(cudaEventDestroy(stop));
  std::nth_element(ms.begin(), ms.begin() + reps / 2, ms.end());
  return ms[reps / 2];
}
inline void print_device() {
  cudaDeviceProp p{};
  TENFOLD_CUDA_CHECK(cudaGetDeviceProperties(&p, 0));
  std::printf("device: %s (sm_%d%d, %d SMs)\n", p.name, p.major, p.minor, p.multiProcessorCount);
}
// A benchmark's start: false (and a visible skip) where there is no device, else the device printed.
inline bool device_ready() {
  if (!cuda::device_available()) {
    std::puts("skipped: no CUDA device");
    return false;
  }
  print_device();
  return true;
}
} // namespace tenfold::bench
