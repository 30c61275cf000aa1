#pragma once
// Shared by the CUDA tests: the visible skip on machines without a device, and host/device round trips.
#include <catch2/catch.hpp>
#include <tenfold/cuda.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <random>

// A test that needs a device says so, visibly, and passes, where there is none (CI, build machines).
#define TENFOLD_REQUIRE_DEVICE()                                    \
  do {                                                              \
    if (!::tenfold::cuda::device_available()) {                     \
      WARN("skipped: no CUDA device");                              \
      return;                                                       \
    }                                                               \
  } while (0)

namespace tenfold::test {

// Uniform values in [lo, hi), the same for a given seed.
template <class T, class S>
Tensor<T, S> random_tensor(double lo, double hi, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  Tensor<T, S> t;
  for (auto& x : t) x = static_cast<T>(d(g));
  return t;
}

// |a - b| in units of T's epsilon at max(|a|, |b|, tiny): both NaN or equal infinities match.
template <class T>
double ulps_apart(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
  if (a == b) return 0;
  if (std::isinf(a) || std::isinf(b)) return INFINITY;
  const double scale = std::max({std::fabs(a), std::fabs(b), double(std::numeric_limits<T>::min())});
  return std::fabs(a - b) / (scale * double(std::numeric_limits<T>::epsilon()));
}
} // namespace tenfold::test
