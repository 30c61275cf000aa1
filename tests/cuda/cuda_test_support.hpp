#pragma once
// Shared by the CUDA tests: the visible skip on machines without a device, and host/device round trips.
#include <catch2/catch.hpp>
#include <tenfold/cuda.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <random>
#include <string>

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

// The worst relative error of `got` against `cpu`, measured against max(|value|, scale): a value much
// smaller than the scale its computation works at (a normalised output near zero, an average of inputs
// of magnitude ~scale) is compared at that scale. Equal values (infinities too) and NaN against NaN
// match; NaN against a number does not.
template <class T, class S>
void check_close(const Tensor<T, S>& cpu, const Tensor<T, S>& got, double rel, const std::string& what, double scale = 1e-3) {
  double worst = 0;
  index_t at = 0;
  for (index_t i = 0; i < S::size; ++i) {
    const double a = double(cpu.data()[i]), b = double(got.data()[i]);
    double err = 0;
    if (std::isnan(a) || std::isnan(b)) err = std::isnan(a) && std::isnan(b) ? 0 : INFINITY;
    else if (a != b) err = std::fabs(a - b) / std::max(std::fabs(a), scale);
    if (err > worst) worst = err, at = i;
  }
  INFO(what << ": worst relative error " << worst << " at flat index " << at << " (CPU " << double(cpu.data()[at])
            << ", device " << double(got.data()[at]) << ")");
  CHECK(worst <= rel);
}
} // namespace tenfold::test
