// Why the op table's float tanh is xsimd's (ops/table_unary.hpp): four ways to compute tanh in SIMD,
// each checked against double over every positive float below 10 (tanh is odd; above 9.01 it rounds
// to 1) and timed on 1024 floats in L1, one thread:
//   table     the table's tanh (xsimd's: a polynomial below 0.625, 1 - 2 / (exp(2x) + 1) above)
//   exp_form  the same two forms on the table's exp (ops/simd_exp.hpp) and a fitted degree-4 odd polynomial
//   eigen     Eigen 3.4's generic_fast_tanh_float (a 13/6 rational, clamped at 7.99)
//   rational  x P(x^2) / Q(x^2), degrees 4 and 5 (scripts/fit_tanh_rational.py), clamped at 9
// The table's spec is 2 ulps (test_spec of ops::tanh); the rationals cost half as much and miss it.
// bench/RESULTS.md (fifty-sixth session) has the numbers and the fused chain's timings with each.
//   build/bench/tenfold_tanh_forms          (about a minute: 2^30 floats per form)
#include <unsupported/Eigen/CXX11/Tensor>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include <tenfold/tenfold.hpp>

namespace {
using B = tenfold::cpu::batch<float>;
namespace sc = tenfold::ops::sc;

B table_tanh(B x) { return tenfold::ops::tanh::simd(x); }

B exp_form(B x) {
  const B a = xsimd::abs(x);
  const B e = tenfold::ops::exp::simd(B(-2.0f) * xsimd::min(B(9.5f), a)); // (min(9.5, NaN) is NaN)
  const B big = xsimd::fnma(e + e, B(1.0f) / (B(1.0f) + e), B(1.0f));      // 1 - 2e / (1 + e), e = exp(-2|x|)
  const B z = x * x;
  B p(-5.7049859315e-03f); // tanh(x) = x + x z P(z) on [0, 0.625] (scripts/fit_tanh_rational.py --odd-poly)
  p = xsimd::fma(p, z, B(2.0639086142e-02f));
  p = xsimd::fma(p, z, B(-5.3739715368e-02f));
  p = xsimd::fma(p, z, B(1.3331441581e-01f));
  p = xsimd::fma(p, z, B(-3.3333280683e-01f));
  return xsimd::select(a < B(0.625f), xsimd::fma(x * z, p, x), big | (x & B(-0.0f)));
}

B rational(B x) {
  x = xsimd::max(B(-9.0f), xsimd::min(B(9.0f), x));
  const B z = x * x;
  constexpr float p[] = {1.0f, 1.3787916303e-01f, 4.0117376484e-03f, 3.1657807995e-05f, 5.0995115686e-08f};
  constexpr float q[] = {1.0f, 4.7121250629e-01f, 2.7749244124e-02f, 4.2131956434e-04f, 1.6227277229e-06f, 7.4202688438e-10f};
  B P(p[4]), Q(q[5]);
  for (int i = 3; i >= 0; --i) P = xsimd::fma(P, z, B(p[i]));
  for (int i = 4; i >= 0; --i) Q = xsimd::fma(Q, z, B(q[i]));
  return x * P / Q;
}

void eigen_tanh(const float* x, float* y, std::size_t n) {
  Eigen::TensorMap<Eigen::Tensor<const float, 1>> X(x, Eigen::Index(n));
  Eigen::TensorMap<Eigen::Tensor<float, 1>> Y(y, Eigen::Index(n));
  Y = X.tanh();
}

// |got - exact| in units of the last place of the float nearest exact (the subnormal spacing below the
// normal range).
double ulps(float got, double exact) {
  const double e = std::abs(exact);
  const double ulp = e < double(std::numeric_limits<float>::min())
                         ? double(std::numeric_limits<float>::denorm_min())
                         : std::ldexp(1.0, std::ilogb(float(e)) - (std::numeric_limits<float>::digits - 1));
  return std::abs(double(got) - exact) / ulp;
}

template <class F>
void accuracy(const char* name, F&& f) {
  constexpr std::size_t chunk = 4096;
  std::vector<float> xs(chunk), ys(chunk);
  double worst = 0, sum = 0;
  float at = 0;
  long over = 0, n = 0, n_mean = 0;
  std::uint32_t ten;
  const float t = 10.0f;
  std::memcpy(&ten, &t, sizeof t);
  for (std::uint32_t b = 1; b < ten; b += chunk) { // (every positive float below 10; denormals too)
    for (std::size_t i = 0; i < chunk; ++i) {
      const std::uint32_t v = std::min<std::uint32_t>(b + std::uint32_t(i), ten - 1);
      std::memcpy(&xs[i], &v, sizeof v);
    }
    f(xs.data(), ys.data(), chunk);
    for (std::size_t i = 0; i < chunk; ++i) {
      const double u = ulps(ys[i], std::tanh(double(xs[i])));
      if (u > worst) worst = u, at = xs[i];
      over += u > 2, ++n;
      if (xs[i] > 1e-3f) sum += u, ++n_mean;
    }
  }
  std::printf("| %s | %.2f | %.6g | %.3f | %.2f%% |", name, worst, double(at), sum / double(n_mean), 100.0 * double(over) / double(n));
}

template <class F>
void speed(F&& f) {
  std::vector<float> x(1024), y(1024);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -3 + 6 * float(i * 7919 % 1024) / 1024; // the chain's range
  std::vector<double> t;
  for (int r = 0; r < 21; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int k = 0; k < 1000; ++k) {
      f(x.data(), y.data(), x.size());
      asm volatile("" ::: "memory");
    }
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1000 / double(x.size()) * 1e9);
  }
  std::sort(t.begin(), t.end());
  std::printf(" %.3f |\n", t[t.size() / 2]);
}

template <B (*F)(B)>
void lanes(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += B::size) F(B::load_unaligned(x + i)).store_unaligned(y + i);
}
} // namespace

int main() {
  std::printf("| float tanh | worst ulps | at x | mean ulps (x > 1e-3) | over 2 ulps | ns per float (median of 21) |\n");
  std::printf("|---|--:|--:|--:|--:|--:|\n");
  accuracy("table (xsimd)", lanes<table_tanh>), speed(lanes<table_tanh>);
  accuracy("exp_form", lanes<exp_form>), speed(lanes<exp_form>);
  accuracy("eigen", eigen_tanh), speed(eigen_tanh);
  accuracy("rational 4/5", lanes<rational>), speed(lanes<rational>);
}
