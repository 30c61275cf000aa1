// float exp through the op table, at the build's ISA, against double: within one ulp of the exact
// result over the whole range where it is finite and non-zero, subnormal results included (rounded to
// the subnormal grid, not flushed), 0 below, inf above, NaN kept. CMake builds this file twice: for the
// build's ISA (AVX-512 here: ops/simd_exp.hpp's vscalefps exp) and for x86-64-v3 (AVX2 + FMA: the
// two-halves exp), the latter skipping visibly on a CPU without AVX2 or FMA.
#include <catch2/catch.hpp>
#include <tenfold/tenfold.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace {
using namespace tenfold;

constexpr index_t chunk = 4096;

// exp of every value through `exp(x)` on tensors (the SIMD path for whole vectors and the tail).
std::vector<float> table_exp(const std::vector<float>& xs) {
  std::vector<float> out(xs.size());
  Tensor<float, shape<chunk>> x, y;
  for (std::size_t i0 = 0; i0 < xs.size(); i0 += chunk) {
    const std::size_t n = std::min<std::size_t>(chunk, xs.size() - i0);
    for (std::size_t i = 0; i < std::size_t(chunk); ++i) x.data()[i] = i < n ? xs[i0 + i] : 0.0f;
    y = exp(x);
    std::memcpy(out.data() + i0, y.data(), n * sizeof(float));
  }
  return out;
}

// |got - exact| in units of the last place of the float nearest exact (the subnormal spacing below
// the normal range).
double ulps(float got, double exact) {
  const double e = std::abs(exact);
  const double ulp = e < double(std::numeric_limits<float>::min())
                         ? double(std::numeric_limits<float>::denorm_min())
                         : std::ldexp(1.0, std::ilogb(float(e)) - (std::numeric_limits<float>::digits - 1));
  return std::abs(double(got) - exact) / ulp;
}

bool isa_present() {
#if defined(__AVX2__) && !defined(__AVX512F__) && (defined(__x86_64__) || defined(__i386__))
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return true; // the build's own ISA: the machine runs it
#endif
}

#define REQUIRE_ISA()                                                   \
  do {                                                                  \
    if (!isa_present()) {                                               \
      WARN("skipped: this CPU has no AVX2 + FMA (x86-64-v3 build)");    \
      return;                                                           \
    }                                                                   \
  } while (0)
} // namespace

TEST_CASE("float exp is within one ulp of the exact result where it is finite and non-zero", "[exp]") {
  REQUIRE_ISA();
  // ln(FLT_MAX) = 88.7228, and the smallest subnormal is 2^-149 = e^-103.28.
  std::vector<float> xs;
  const int n = 2'000'000;
  for (int i = 0; i <= n; ++i) xs.push_back(float(-103.9 + (88.72 + 103.9) * i / n));
  std::mt19937 g(7);
  std::uniform_real_distribution<float> small(-1.0f, 1.0f);
  for (int i = 0; i < 500'000; ++i) xs.push_back(small(g));
  for (int i = 0; i < 700'000; ++i) xs.push_back(-0.35f + float(i) * 1e-6f); // n = 0: the polynomial alone
  const auto ys = table_exp(xs);
  double worst = 0, worst_sub = 0;
  float at = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const double exact = std::exp(double(xs[i]));
    const double u = ulps(ys[i], exact);
    if (exact < double(std::numeric_limits<float>::min())) worst_sub = std::max(worst_sub, u);
    else if (u > worst) worst = u, at = xs[i];
  }
  INFO("worst " << worst << " ulp at x = " << at << ", subnormal results: " << worst_sub << " ulp");
  CHECK(worst <= 1.0);
  CHECK(worst_sub <= 1.0); // rounded once, on the subnormal grid (flushing would be 2^23 ulp off)
}

TEST_CASE("the build's ISA takes its own exp", "[exp]") {
#if defined(__AVX512F__)
  CHECK(ops::sc::avx512_float_v<cpu::batch<float>>);
#elif defined(__AVX2__) && defined(__FMA__)
  CHECK(ops::sc::avx2_float_v<cpu::batch<float>>);
#else
  CHECK(cpu::lanes<float> >= 1); // xsimd's exp with the table's range redo (SSE2, NEON)
#endif
}

TEST_CASE("float exp at the edges: overflow, underflow, infinities and NaN", "[exp]") {
  REQUIRE_ISA();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> xs{88.72f, 88.7228f, 88.73f, 89.0f, 100.0f, 1e30f, inf, -102.5f, -103.97f, -104.0f, -110.0f, -1e30f, -inf, nan, 0.0f, -0.0f};
  const auto ys = table_exp(xs);
  CHECK(std::isfinite(ys[0]));
  CHECK(ys[0] > 3.3e38f);
  CHECK(std::isfinite(ys[1])); // e^88.7228 < FLT_MAX
  for (int i = 2; i <= 6; ++i) CHECK(ys[i] == inf);
  CHECK(ys[7] == std::numeric_limits<float>::denorm_min() * 2); // e^-102.5 = 2.18 x 2^-149 -> 2 x 2^-149
  CHECK(ys[8] == std::numeric_limits<float>::denorm_min()); // e^-103.97 = 0.5 x 2^-149 + a little -> 2^-149
  for (int i = 9; i <= 12; ++i) CHECK(ys[i] == 0.0f);
  CHECK(std::isnan(ys[13]));
  CHECK(ys[14] == 1.0f);
  CHECK(ys[15] == 1.0f);
}

TEST_CASE("float exp of an edge value among ordinary ones: the same bits as alone", "[exp]") {
  // The AVX2 exp has a fast path for vectors whose lanes all give normal results, which zeroes lanes
  // x <= -104 (masked scores, -inf) by a mask and sends any other edge lane's whole vector to the wide
  // path; so each edge value is tried at every lane position among values the fast path takes.
  REQUIRE_ISA();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  float payload_nan; // a NaN with low mantissa bits set, which must not leak into the exponent field
  const std::uint32_t bits = 0x7fc001ffu;
  std::memcpy(&payload_nan, &bits, sizeof bits);
  const std::vector<float> edges{88.72f, 88.73f, inf, -86.49f, -86.51f, -87.5f, -102.5f, -103.97f, -104.0f,
                                 -104.01f, -110.0f, -1e30f, -inf, nan, -nan, payload_nan, 86.49f, 86.51f};
  const auto alone = table_exp(edges);
  for (std::size_t e = 0; e < edges.size(); ++e) {
    for (int k = 0; k < 16; ++k) {
      std::vector<float> xs(16);
      for (int i = 0; i < 16; ++i) xs[std::size_t(i)] = 0.37f * float(i) - 2.9f;
      xs[std::size_t(k)] = edges[e];
      const auto ys = table_exp(xs);
      INFO("edge " << edges[e] << " at lane " << k);
      if (std::isnan(alone[e])) CHECK(std::isnan(ys[std::size_t(k)]));
      else CHECK(ys[std::size_t(k)] == alone[e]);
      for (int i = 0; i < 16; ++i)
        if (i != k) CHECK(ulps(ys[std::size_t(i)], std::exp(double(xs[std::size_t(i)]))) <= 1.0);
    }
  }
  CHECK(std::isnan(alone[15]));
  CHECK(alone[8] == 0.0f);
  CHECK(alone[12] == 0.0f);
  CHECK(alone[3] > 0.0f); // e^-86.49: normal
}

TEST_CASE("softmax rows built on exp sum to one at this ISA", "[exp]") {
  REQUIRE_ISA();
  Tensor<float, shape<3, 37>> x, y;
  std::mt19937 g(3);
  std::uniform_real_distribution<float> d(-30.0f, 30.0f);
  for (auto& v : x) v = d(g);
  y = softmax(x, axis<1>);
  for (index_t r = 0; r < 3; ++r) {
    double s = 0, m = -1e30;
    for (index_t c = 0; c < 37; ++c) m = std::max(m, double(x(r, c)));
    for (index_t c = 0; c < 37; ++c) s += std::exp(double(x(r, c)) - m);
    // x - max is rounded to float before exp: relative error up to |x - max| 2^-24 on top of a few ulp.
    for (index_t c = 0; c < 37; ++c) {
      const double d = double(x(r, c)) - m;
      CHECK(double(y(r, c)) == Approx(std::exp(d) / s).epsilon(4e-7 + std::abs(d) * 6e-8));
    }
  }
}
